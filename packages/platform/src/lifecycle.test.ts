/**
 * The service runner's liveness and crash handling: alive() is false once any component says it
 * stopped for good; an unhandled rejection or an uncaught exception is logged and ends the
 * process non-zero (checked in a child process, since it really exits).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { type Component, createServiceRunner } from './lifecycle.js';
import { createLogger } from './logger.js';

const part = (name: string, alive?: () => boolean): Component => ({
  name,
  start: async () => {},
  stop: async () => {},
  healthy: () => true,
  ...(alive ? { alive } : {}),
});

describe('service runner', () => {
  it('is alive while every component is, and not once one stopped for good', () => {
    let consumerAlive = true;
    const runner = createServiceRunner({
      logger: createLogger({ service: 'test', level: 'silent' }),
      components: [part('http'), part('consumer', () => consumerAlive)],
      clients: [],
      shutdownTimeoutMs: 1_000,
    });
    expect(runner.alive()).toBe(true);
    consumerAlive = false;
    expect(runner.alive()).toBe(false);
  });

  it.each([
    ['an unhandled rejection', 'void Promise.reject(new Error("nobody caught me"));'],
    ['an uncaught exception', 'setTimeout(() => { throw new Error("nobody caught me"); }, 0);'],
  ])('logs %s and exits non-zero', async (_what, trigger) => {
    const dir = mkdtempSync(join(tmpdir(), 'crash-'));
    const script = join(dir, 'crash.ts');
    const lifecycle = fileURLToPath(new URL('./lifecycle.ts', import.meta.url));
    const logger = fileURLToPath(new URL('./logger.ts', import.meta.url));
    writeFileSync(
      script,
      `import { installCrashHandlers } from ${JSON.stringify(lifecycle)};
import { createLogger } from ${JSON.stringify(logger)};
installCrashHandlers(createLogger({ service: 'crash-test', level: 'info' }));
${trigger}
setTimeout(() => process.exit(0), 5_000);
`,
    );
    const result = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], { cwd: fileURLToPath(new URL('../../..', import.meta.url)) }).then(
      () => ({ code: 0, stdout: '' }),
      (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
    );
    expect(result.code).toBe(1);
    const line = JSON.parse(result.stdout.trim().split('\n').at(-1) ?? '{}') as { level?: number | string; msg?: string; err?: { message?: string } };
    expect(line.msg).toBe('crashed: exiting');
    expect(line.err?.message).toBe('nobody caught me');
  });
});
