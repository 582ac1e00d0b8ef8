/**
 * scripts/stack.sh's command line: `down` stops only the server it names (it used to ignore the
 * name and stop every server, a trap found twice while using the product), and a word the script
 * does not understand is refused with the usage instead of being ignored. The script is sourced
 * with its main off and the functions that touch servers replaced by ones that say what they
 * were asked to do, so no server is stopped here.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { afterAll, describe, expect, it } from 'vitest';

const stackDir = mkdtempSync(join(tmpdir(), 'stack-args-'));
afterAll(() => rmSync(stackDir, { recursive: true, force: true }));

const STUBS = [
  'take_lock() { :; }',
  'kafka_down() { echo "stop kafka"; }',
  'stop_server() { echo "stop $1"; }',
  'clickhouse_cluster_down() { echo "stop clickhouse cluster"; }',
  'cmd_up() { echo up; }',
  'cmd_status() { echo status; }',
  'cmd_reset() { echo reset; }',
].join('\n');

function stack(args: string[], env: Record<string, string> = {}): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync('bash', ['-c', `STACK_NO_MAIN=1 source scripts/stack.sh\n${STUBS}\nmain "$@"`, 'stack.sh', ...args], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    timeout: 30_000,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? stackDir, STACK_DIR: stackDir, ...env },
  });
  return { status: run.status, stdout: run.stdout.trim(), stderr: run.stderr };
}

describe('stack.sh down and its arguments', () => {
  it('stops every server without a name, and only the one named with one', () => {
    expect(stack(['down']).stdout.split('\n')).toEqual(['stop kafka', 'stop clickhouse', 'stop redis']);
    expect(stack(['down', 'redis']).stdout).toBe('stop redis');
    expect(stack(['down', 'clickhouse']).stdout).toBe('stop clickhouse');
    expect(stack(['down', 'kafka']).stdout).toBe('stop kafka');
    expect(stack(['down'], { STACK_CLICKHOUSE_REPLICAS: '2' }).stdout.split('\n')).toContain('stop clickhouse cluster');
    expect(stack(['down', 'redis'], { STACK_CLICKHOUSE_REPLICAS: '2' }).stdout).toBe('stop redis');
  });

  it('refuses a word it does not understand with the usage (exit 2), stopping nothing', () => {
    for (const args of [
      ['down', 'nonsense'],
      ['down', 'redis', 'kafka'],
      ['up', 'redis'],
      ['status', 'kafka'],
      ['reset', 'redis'],
    ]) {
      const run = stack(args);
      expect({ args, status: run.status, stdout: run.stdout }).toEqual({ args, status: 2, stdout: '' });
      expect(run.stderr).toContain('down|logs [kafka|clickhouse|redis]');
    }
    expect(stack(['up']).stdout).toBe('up');
  });

  it('leaves the plain stack shared ClickHouse and Redis to the plain stack in secure and cluster mode', () => {
    for (const env of [{ STACK_KAFKA_SECURITY: 'sasl_ssl' }, { STACK_KAFKA_NODES: '3' }] as Record<string, string>[]) {
      expect(stack(['down'], env).stdout).toBe('stop kafka');
      const named = stack(['down', 'redis'], env);
      expect({ status: named.status, stdout: named.stdout }).toEqual({ status: 1, stdout: '' });
      expect(named.stderr).toContain('shared with the plain stack');
    }
  });
});
