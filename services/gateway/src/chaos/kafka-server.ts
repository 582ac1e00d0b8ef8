import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@ingest/shared';
import { waitFor } from '@ingest/shared/testing';

/**
 * Stops and starts the local stack's own Kafka broker (scripts/stack.sh, pid file under
 * STACK_DIR). Chaos tests run alone, so taking the shared broker away is allowed there.
 */
const stackDir = process.env.STACK_DIR ?? join(REPO_ROOT, '.local');
const port = Number(process.env.KAFKA_PORT ?? 9092);

function portOpen(): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });
}

export async function stopKafka(): Promise<void> {
  const pid = Number(readFileSync(join(stackDir, 'kafka', 'kafka.pid'), 'utf8').trim());
  process.kill(pid, 'SIGTERM');
  await waitFor(async () => !(await portOpen()) || undefined, { description: 'Kafka to stop', timeoutMs: 60_000 });
}

export async function startKafka(): Promise<void> {
  await promisify(execFile)('bash', [join(REPO_ROOT, 'scripts', 'stack.sh'), 'up'], { env: process.env, timeout: 180_000 });
}
