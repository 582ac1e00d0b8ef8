/**
 * The stack's Kafka start on a machine that has never run the project (issue 23: a newcomer's
 * first `npm test` failed because the broker's 60 s readiness budget started before the
 * first-run Maven download of its jars, and was gone before the JVM started).
 *
 * Real: `bash scripts/stack.sh up` as `npm test` and `npm start` run it, Maven, Java and the
 * broker it starts, on ports and a STACK_DIR of this file's own (ClickHouse and Redis are the
 * ones already running, reused). Simulated, so that CI downloads nothing: an empty Maven cache
 * (a maven.repo.local of its own) and Maven Central (a file:// mirror of the filled cache,
 * ~/.m2/repository, read only), reached through the `mvn` on PATH, which also makes the fetch
 * take FETCH_SECONDS however fast the copy is. The broker is stopped at the end, even on failure.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO_ROOT } from '@ingest/platform';
import { freePort } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CommandResult, run } from './test/run-command.js';

/** The broker's readiness budget in this test, and a fetch that takes longer than all of it. */
const BUDGET_SECONDS = 10;
const FETCH_SECONDS = 11;

const FILLED_CACHE = join(homedir(), '.m2', 'repository');
const KAFKA_VERSION = /<kafka\.version>([^<]+)</.exec(readFileSync(join(REPO_ROOT, 'deploy/kafka/pom.xml'), 'utf8'))?.[1] ?? '';

const dir = mkdtempSync(join(tmpdir(), 'first-run-'));
const stackDir = join(dir, 'stack');
const mavenRepo = join(dir, 'm2-empty');
/** "Maven Central" as the mirror names it: a link, pointed at a broken or a whole repository. */
const central = join(dir, 'central');
const shimCalls = join(dir, 'mvn-calls');
let env: Record<string, string>;
let kafkaPort: number;

/** `bash scripts/stack.sh ARGS`; SIGTERM at `timeoutMs`, so its trap also stops a fetch under timeout(1). */
function stack(args: string[], timeoutMs: number): Promise<CommandResult> {
  return run('bash', ['scripts/stack.sh', ...args], { env, timeoutMs, killSignal: 'SIGTERM' });
}

/** Links to everything under `source` except the path `omit` (e.g. org/apache/kafka). */
function linkAllBut(source: string, target: string, omit: string[]): void {
  mkdirSync(target, { recursive: true });
  const [head, ...rest] = omit;
  for (const entry of readdirSync(source)) {
    if (entry !== head) symlinkSync(join(source, entry), join(target, entry));
    else if (rest.length > 0) linkAllBut(join(source, entry), join(target, entry), rest);
  }
}

function pointCentralAt(path: string): void {
  rmSync(central, { force: true }); // the link, not what it points at
  symlinkSync(path, central);
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/** The broker's pid from the stack's pid file, if that process still runs. */
function brokerPid(): number | undefined {
  const file = join(stackDir, 'kafka', 'kafka.pid');
  if (!existsSync(file)) return undefined;
  const pid = Number(readFileSync(file, 'utf8').trim());
  return existsSync(`/proc/${pid}`) ? pid : undefined;
}

beforeAll(async () => {
  const jar = join(FILLED_CACHE, 'org/apache/kafka/kafka_2.13', KAFKA_VERSION, `kafka_2.13-${KAFKA_VERSION}.jar`);
  if (!existsSync(jar)) throw new Error(`${jar} is missing: this test copies the broker jars from the filled Maven cache; run 'bash scripts/stack.sh up' once`);
  linkAllBut(FILLED_CACHE, join(dir, 'central-without-kafka'), ['org', 'apache', 'kafka']);
  writeFileSync(
    join(dir, 'settings.xml'),
    `<settings><mirrors><mirror><id>central-mirror</id><mirrorOf>*</mirrorOf><url>${pathToFileURL(central).href}</url></mirror></mirrors></settings>\n`,
  );
  const realMvn = execFileSync('bash', ['-c', 'command -v mvn'], { encoding: 'utf8' }).trim();
  mkdirSync(join(dir, 'bin'));
  writeFileSync(
    join(dir, 'bin', 'mvn'),
    [
      '#!/usr/bin/env bash',
      '# Maven with an empty cache behind a slow connection: the real mvn, given its own empty',
      '# repository and the mirror, and at least FIRST_RUN_FETCH_SECONDS long.',
      'started=$(date +%s%N)',
      'sleep "${FIRST_RUN_FETCH_SECONDS:-0}" & sleeper=$!',
      `${JSON.stringify(realMvn)} -s ${JSON.stringify(join(dir, 'settings.xml'))} -Dmaven.repo.local=${JSON.stringify(mavenRepo)} "$@"; rc=$?`,
      'wait "$sleeper"',
      `echo "$started $(date +%s%N) $rc" >>${JSON.stringify(shimCalls)}`,
      'exit "$rc"',
      '',
    ].join('\n'),
    { mode: 0o755 },
  );
  kafkaPort = await freePort();
  let controllerPort = await freePort();
  while (controllerPort === kafkaPort) controllerPort = await freePort();
  const { RETRY_COMMAND: _retry, STACK_KAFKA_SECURITY: _security, ...inherited } = process.env;
  env = {
    ...(inherited as Record<string, string>),
    PATH: `${join(dir, 'bin')}:${process.env.PATH ?? ''}`,
    STACK_DIR: stackDir,
    KAFKA_PORT: String(kafkaPort),
    KAFKA_CONTROLLER_PORT: String(controllerPort),
    KAFKA_START_TIMEOUT: String(BUDGET_SECONDS),
    INSTALL_PROGRESS_INTERVAL: '5',
  };
});

afterAll(async () => {
  const down = await stack(['down'], 60_000).catch((err: unknown) => ({ code: -1, stdout: '', stderr: String(err) }));
  const pid = brokerPid();
  if (pid !== undefined) process.kill(pid, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
  if (down.code !== 0) throw new Error(`stack.sh down failed: ${down.stdout}${down.stderr}`);
});

describe('the stack on a machine whose Maven cache is empty', () => {
  it('a fetch that fails stops with one line naming the cause and the retry, and leaves no jar directory', async () => {
    pointCentralAt(join(dir, 'central-without-kafka'));
    env.FIRST_RUN_FETCH_SECONDS = '0';
    const up = await stack(['up'], 60_000);
    const said = `exit ${up.code}\n${up.stdout}${up.stderr}`;

    expect(up.code, said).toBe(1);
    expect(up.stderr.trimEnd().split('\n'), said).toEqual([
      expect.stringMatching(
        new RegExp(
          `^kafka: ERROR: fetching the broker jars with Maven failed \\(exit 1\\): Could not find artifact org\\.apache\\.kafka:kafka_2\\.13:jar:${KAFKA_VERSION.replace(/\./g, '\\.')} .*; log \\S+/mvn\\.log; retry: bash scripts/stack\\.sh up$`,
        ),
      ),
    ]);
    const kafkaDir = readdirSync(join(stackDir, 'kafka'));
    expect(
      kafkaDir.filter((f) => f.startsWith('libs')),
      said,
    ).toEqual([]);
    expect(brokerPid()).toBeUndefined();
    expect(await portOpen(kafkaPort)).toBe(false);
    // What Maven remembers of the failure, which would refuse the retry for a day without -U.
    expect(readdirSync(join(mavenRepo, 'org/apache/kafka/kafka_2.13', KAFKA_VERSION)).some((f) => f.endsWith('.lastUpdated'))).toBe(true);
  });

  it(`the broker's ${BUDGET_SECONDS} s readiness budget starts with the broker, after a ${FETCH_SECONDS} s fetch and the storage format`, async () => {
    pointCentralAt(FILLED_CACHE);
    env.FIRST_RUN_FETCH_SECONDS = String(FETCH_SECONDS);
    const up = await stack(['up'], 90_000);
    const said = `exit ${up.code}\n${up.stdout}${up.stderr}`;

    expect(up.code, said).toBe(0);
    expect(up.stdout).toContain('kafka: fetching broker jars with Maven (first run only)');
    expect(up.stdout).toMatch(/^kafka: fetching the broker jars with Maven: \d+ files, [\d.]+ MB downloaded \(\d+s; gives up after 900s\)$/m);
    expect(up.stdout).toMatch(/^kafka: fetched \d+ jars in \d+s/m);
    expect(up.stdout).toMatch(/^kafka: formatted storage in \d+s$/m);
    const ready = new RegExp(`^kafka: started pid \\d+ on 127\\.0\\.0\\.1:${kafkaPort}, ready after (\\d+)s`, 'm').exec(up.stdout);
    expect(ready, said).not.toBeNull();
    // The premise: this fetch alone took longer than the broker's whole budget.
    const [started, ended, rc] = readFileSync(shimCalls, 'utf8').trim().split('\n').at(-1)?.split(' ').map(Number) ?? [];
    expect(rc).toBe(0);
    expect(((ended ?? 0) - (started ?? 0)) / 1e9).toBeGreaterThan(BUDGET_SECONDS);
    expect(readdirSync(join(stackDir, 'kafka', 'libs')).filter((f) => f.startsWith('kafka_2.13-'))).toEqual([`kafka_2.13-${KAFKA_VERSION}.jar`]);
    expect(await portOpen(kafkaPort)).toBe(true);
  });
});
