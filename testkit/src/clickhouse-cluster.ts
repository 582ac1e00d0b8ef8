/**
 * The local replicated ClickHouse of the scale tests (scripts/stack-clickhouse-cluster.sh): ZooKeeper
 * and two 18.16 replicas of one shard beside the default server, started (or reused) by the
 * script. Tests SIGKILL a replica or ZooKeeper by the pid the script recorded and start it again
 * with the script, as an operator would.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { open, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT } from '@ingest/platform';

export const CLUSTER_NAME = 'ingest_cluster';
export const REPLICAS = [1, 2] as const;
export type Replica = (typeof REPLICAS)[number];

const script = join(REPO_ROOT, 'scripts', 'stack-clickhouse-cluster.sh');
const stackDir = () => process.env.STACK_DIR ?? join(REPO_ROOT, '.local');
const clusterDir = () => join(stackDir(), 'clickhouse-cluster');

/**
 * The script's default of one of its `NAME=${NAME:-default}` settings: the ports live in the
 * script alone, so the tests cannot drift from what it starts.
 */
export function clusterScriptDefault(name: string): string {
  const found = new RegExp(`^${name}=\\$\\{${name}:-([^}]*)\\}$`, 'm').exec(readFileSync(script, 'utf8'));
  if (!found?.[1]) throw new Error(`no default for ${name} in ${script}`);
  return found[1];
}

/** Replica 1's HTTP port as the script picks it: CLICKHOUSE_REPLICA_HTTP_PORT (it runs with this environment), else its default. */
function replicaHttpPortBase(): number {
  return Number(process.env.CLICKHOUSE_REPLICA_HTTP_PORT || clusterScriptDefault('CLICKHOUSE_REPLICA_HTTP_PORT'));
}

export function replicaUrl(replica: Replica): string {
  return `http://127.0.0.1:${replicaHttpPortBase() + replica - 1}`;
}

/** CLICKHOUSE_URL for the services: every replica, the first preferred. */
export function clusterUrls(): string {
  return REPLICAS.map(replicaUrl).join(',');
}

async function run(...args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)('bash', [script, ...args], {
    env: { ...process.env, STACK_CLICKHOUSE_REPLICAS: String(REPLICAS.length), CLICKHOUSE_CLUSTER_NAME: CLUSTER_NAME },
    timeout: 240_000,
  });
  return stdout;
}

/** ZooKeeper and both replicas up (started, or reused when they answer). */
export async function startCluster(): Promise<void> {
  await run('up');
}

export async function startReplica(replica: Replica): Promise<void> {
  await run('start-replica', String(replica));
}

export async function startZooKeeper(): Promise<void> {
  await run('up');
}

function pidOf(file: string): number {
  const pid = Number(readFileSync(file, 'utf8').trim());
  if (!Number.isInteger(pid) || pid <= 1) throw new Error(`no pid in ${file}`);
  return pid;
}

async function killAndWait(pid: number): Promise<void> {
  process.kill(pid, 'SIGKILL');
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    try {
      process.kill(pid, 0);
    } catch {
      return;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`pid ${pid} still alive 10 s after SIGKILL`);
}

/** SIGKILL: no shutdown, whatever it was writing is cut off. */
export async function killReplica(replica: Replica): Promise<void> {
  await killAndWait(pidOf(join(clusterDir(), `replica-${replica}`, 'clickhouse.pid')));
}

export async function killZooKeeper(): Promise<void> {
  await killAndWait(pidOf(join(clusterDir(), 'zookeeper', 'zookeeper.pid')));
}

/** One database's directory on one replica, on a small file system of its own (mountSmallDisk). */
export interface SmallDisk {
  readonly path: string;
  /** Writes a file until the file system is full (ENOSPC); resolves the bytes it took. */
  fill(): Promise<number>;
  /** Deletes that file: the space is back. */
  free(): Promise<void>;
  /** Frees, unmounts and removes the mount point (after the database was dropped). */
  unmount(): Promise<void>;
}

/**
 * A real full disk for one replica: `database`'s data directory on that replica becomes a tmpfs
 * of `sizeMb` MB, mounted before the database is made (ClickHouse then keeps every table of the
 * database there) and filled on demand. Needs root and `mount` (the development machines and CI
 * have both); the database must not exist yet. Dropping the database later fails on this
 * replica at its last step (the mount point cannot be removed: EBUSY) after the tables are gone,
 * which unmount() then finishes.
 */
export async function mountSmallDisk(replica: Replica, database: string, sizeMb: number): Promise<SmallDisk> {
  if (!/^[A-Za-z0-9_]+$/.test(database)) throw new Error(`not a plain database name: ${database}`);
  const path = join(clusterDir(), `replica-${replica}`, 'data', 'data', database);
  const filler = join(path, 'filler.bin');
  const exec = promisify(execFile);
  mkdirSync(path, { recursive: true });
  try {
    await exec('mount', ['-t', 'tmpfs', '-o', `size=${sizeMb}m,mode=0755`, 'tmpfs', path]);
  } catch (err) {
    throw new Error(`mounting a ${sizeMb} MB tmpfs on ${path} failed (needs root and mount): ${(err as Error).message}`, { cause: err });
  }
  const free = () => rm(filler, { force: true });
  return {
    path,
    async fill() {
      const file = await open(filler, 'a');
      let written = 0;
      try {
        // Large writes, then small ones for the last partial pages, until nothing fits.
        for (const size of [1 << 20, 4096, 1]) {
          const chunk = Buffer.alloc(size);
          for (;;) {
            try {
              written += (await file.write(chunk)).bytesWritten;
            } catch (err) {
              if ((err as NodeJS.ErrnoException).code === 'ENOSPC') break;
              throw err;
            }
          }
        }
      } finally {
        await file.close();
      }
      return written;
    },
    free,
    async unmount() {
      await free();
      // Lazily: a replica that still holds a file of the dropped database must not block it.
      await exec('umount', ['-l', path]);
      await rm(path, { recursive: true, force: true });
    },
  };
}
