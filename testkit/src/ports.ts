import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/**
 * Below the kernel's ephemeral range: a port from `listen(0)` lies inside it, where any outgoing
 * connection the test makes meanwhile may take it before the process under test binds it (an
 * EADDRINUSE seen in CI). scripts/lib.sh's free_port picks the same way.
 */
const LOWEST = 20_000;

function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > LOWEST + 1000 ? low : 32_768;
  } catch {
    return 32_768;
  }
}

function listens(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** A loopback port that was free a moment ago, for a process the test or benchmark starts. */
export async function freePort(): Promise<number> {
  const high = ephemeralLow();
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const port = LOWEST + Math.floor(Math.random() * (high - LOWEST));
    if (await listens(port)) return port;
  }
  throw new Error(`no free loopback port between ${LOWEST} and ${high} after 50 tries`);
}
