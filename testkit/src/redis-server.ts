import { type ChildProcess, spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyRedisAcl, type Closeable, connectRedis, createRedis, persistRedisAcl, type Redis, REDIS_ROLES, type RedisRole } from '@ingest/platform';
import { freePort } from './ports.js';
import { waitFor } from './wait.js';

/**
 * A Redis server of the test's own (`redis-server`, which scripts/stack.sh installs), for tests
 * that stop Redis: the shared one keeps running for every other test. No persistence unless
 * asked for (`appendOnly`); its files live in a temporary directory removed by `close`.
 */
export interface OwnRedis {
  /** With the password, when it has one (`redis://:password@127.0.0.1:port`). */
  url: string;
  port: number;
  /** SIGKILL, as a crash; resolves once the port refuses connections. */
  stop(): Promise<void>;
  /** Starts it again on the same port (empty unless `appendOnly`: then from its append-only file). */
  start(): Promise<void>;
  close(): Promise<void>;
}

function answersPing(port: number, tls: boolean): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tls
      ? tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => socket.write('PING\r\n'))
      : connect({ host: '127.0.0.1', port }, () => socket.write('PING\r\n'));
    socket.setTimeout(1_000, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('data', (data) => {
      socket.destroy();
      // A server with a password answers NOAUTH: it is up all the same.
      resolve(/^(\+PONG|-NOAUTH)/.test(data.toString()));
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * The users in an ACL file, as scripts/stack.sh and docker-compose.yml run Redis: what `ACL SAVE`
 * wrote survives a restart; the default user's password (Redis ignores requirepass with an
 * aclfile) is written into it on every start. Returns the file's path.
 */
function writeAclFile(dir: string, password: string | undefined): string {
  const file = join(dir, 'users.acl');
  const saved = existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => line !== '' && !line.startsWith('user default '))
    : [];
  const secret = password === undefined ? 'nopass' : `#${createHash('sha256').update(password).digest('hex')}`;
  writeFileSync(file, [`user default on ${secret} ~* &* +@all`, ...saved, ''].join('\n'), { mode: 0o600 });
  return file;
}

/**
 * `password`: the server requires it (requirepass), as `STACK_REDIS_PASSWORD` makes the stack's.
 * `aclFile`: the users live in an ACL file (writeAclFile), so role users saved there survive `stop()` and `start()`.
 * `tls`: it speaks TLS only (rediss://), with this certificate and key.
 * `appendOnly`: with the append-only file, as the stack runs Redis (fsync always here, so a
 * SIGKILL loses nothing that was answered).
 */
export async function startOwnRedis(
  options: { password?: string; tls?: { certFile: string; keyFile: string }; appendOnly?: boolean; aclFile?: boolean } = {},
): Promise<OwnRedis> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'own-redis-'));
  let child: ChildProcess | undefined;
  const killOnExit = () => child?.kill('SIGKILL');
  process.once('exit', killOnExit);

  async function start(): Promise<void> {
    const auth = options.aclFile
      ? ['--aclfile', writeAclFile(dir, options.password)]
      : options.password === undefined
        ? []
        : ['--requirepass', options.password];
    const { tls } = options;
    const ports = tls
      ? ['--port', '0', '--tls-port', String(port), '--tls-cert-file', tls.certFile, '--tls-key-file', tls.keyFile, '--tls-auth-clients', 'no']
      : ['--port', String(port)];
    const persistence = options.appendOnly ? ['--appendonly', 'yes', '--appendfsync', 'always'] : ['--appendonly', 'no'];
    const proc = spawn('redis-server', [...ports, '--bind', '127.0.0.1', '--save', '', ...persistence, '--dir', dir, ...auth], {
      stdio: 'ignore',
    });
    child = proc;
    let failed: Error | undefined;
    proc.once('error', (err) => (failed = err));
    await waitFor(
      async () => {
        if (failed) throw new Error(`redis-server could not start (is it installed? scripts/stack.sh installs it): ${failed.message}`);
        return answersPing(port, options.tls !== undefined);
      },
      { description: `own redis-server on :${port}`, timeoutMs: 15_000, intervalMs: 100 },
    );
  }

  async function stop(): Promise<void> {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill('SIGKILL');
    await exited;
  }

  await start();
  return {
    url: `${options.tls ? 'rediss' : 'redis'}://${options.password === undefined ? '' : `:${encodeURIComponent(options.password)}@`}127.0.0.1:${port}`,
    port,
    stop,
    start,
    async close() {
      await stop();
      process.removeListener('exit', killOnExit);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A Redis of the test's own with the role users of redis-acl.ts: each role's URL, and the admin's (the default user). */
export interface RedisWithRoles extends OwnRedis {
  /** `redis://<role>:<password>@127.0.0.1:port`, one per role. */
  roleUrls: Record<RedisRole, string>;
  /** Creates (or resets) the role users with their passwords again, as a second run of setup does. */
  applyRoles(): Promise<void>;
  /** A connected client as `role`'s user; `close()` closes every client made here before the server. */
  connectAs(role: RedisRole): Promise<Redis>;
}

/**
 * Starts a redis-server and creates the role users with `applyRedisAcl` (what `ingest setup`
 * runs), so a test runs a store under the user its service has. `url` is the admin's.
 */
export async function startRedisWithRoles(options: { keyPrefix?: string; aclFile?: boolean } = {}): Promise<RedisWithRoles> {
  const own = await startOwnRedis({ password: randomBytes(12).toString('hex'), ...(options.aclFile ? { aclFile: true, appendOnly: true } : {}) });
  const passwords = Object.fromEntries(REDIS_ROLES.map((role) => [role, randomBytes(12).toString('hex')])) as Record<RedisRole, string>;
  const applyRoles = async () => {
    const admin = createRedis({ url: own.url });
    try {
      await connectRedis(admin);
      await applyRedisAcl(admin, passwords, options.keyPrefix ?? '');
      if (options.aclFile) await persistRedisAcl(admin);
    } finally {
      await admin.close();
    }
  };
  await applyRoles();
  const roleUrls = Object.fromEntries(REDIS_ROLES.map((role) => [role, `redis://${role}:${passwords[role]}@127.0.0.1:${own.port}`])) as Record<
    RedisRole,
    string
  >;
  const clients: (Redis & Closeable)[] = [];
  return {
    ...own,
    roleUrls,
    applyRoles,
    async connectAs(role) {
      const redis = createRedis({ url: roleUrls[role] });
      await connectRedis(redis);
      clients.push(redis);
      return redis;
    },
    async close() {
      for (const c of clients.splice(0)) await c.close();
      await own.close();
    },
  };
}
