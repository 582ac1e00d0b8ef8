/**
 * Real servers: redis-server processes of the test's own (one with a password and an ACL user,
 * one speaking TLS only), Kafka for a service's start-up. REDIS_URL carries the password and the
 * ACL user, rediss:// turns on TLS (REDIS_TLS_CA_FILE trusts a private CA), and a missing or
 * wrong password is a clear start-up error naming REDIS_URL, never the password.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { integrationEnv, type OwnRedis, startOwnRedis, testCredentialKeys } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './paths.js';
import { connectRedis, createRedis, readRedisTlsCa } from './redis.js';

const PASSWORD = 'stack-redis-pw-93f1';
let own: OwnRedis;

beforeAll(async () => {
  own = await startOwnRedis({ password: PASSWORD });
});

afterAll(async () => {
  await own?.close();
});

async function connectError(url: string): Promise<Error & { code?: string }> {
  const redis = createRedis({ url });
  try {
    await connectRedis(redis);
  } catch (err) {
    return err as Error & { code?: string };
  } finally {
    redis.disconnect();
  }
  throw new Error(`${url} connected`);
}

describe('Redis credentials and TLS', () => {
  it('connects with the password in REDIS_URL, and with an ACL user and its password', async () => {
    const redis = createRedis({ url: own.url });
    await connectRedis(redis);
    expect(await redis.ping()).toBe('PONG');
    await redis.call('ACL', 'SETUSER', 'ingest', 'on', '>ingest-user-pw', '~*', '+@all');
    await redis.close();
    const asUser = createRedis({ url: `redis://ingest:ingest-user-pw@127.0.0.1:${own.port}` });
    await connectRedis(asUser);
    expect(await asUser.call('ACL', 'WHOAMI')).toBe('ingest');
    await asUser.close();
  });

  it('a missing or wrong password is an error naming REDIS_URL and the reason, not the password', async () => {
    const missing = await connectError(`redis://127.0.0.1:${own.port}`);
    expect(missing).toMatchObject({ code: 'redis_auth_failed' });
    expect(missing.message).toMatch(/^REDIS_URL: Redis refused the credentials \(NOAUTH/);
    const wrong = await connectError(`redis://:not-${PASSWORD}@127.0.0.1:${own.port}`);
    expect(wrong.message).toMatch(/^REDIS_URL: Redis refused the credentials \(WRONGPASS/);
    expect(wrong.message).not.toContain(PASSWORD);
  });

  it('a service started with a wrong password exits at once with that error', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'services/crm-sink/src/main.ts'], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        KAFKA_BROKERS: integrationEnv().kafkaBrokers,
        KAFKA_DRIVER: integrationEnv().kafkaDriver,
        REDIS_URL: `redis://:wrong-password@127.0.0.1:${own.port}`,
        CRM_SINK_OPS_PORT: '0',
        ...testCredentialKeys().sinkEnv,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, output).not.toBe(0);
    expect(output).toContain('REDIS_URL: Redis refused the credentials (WRONGPASS');
    expect(output).not.toContain('wrong-password');
  });

  it.each([
    ['a wrong password', `:not-${PASSWORD}@`],
    ['no password', ''],
  ])('close() ends a client that cannot authenticate (%s), with a command waiting, at once', async (_, credentials) => {
    // The service's shutdown closes its clients, also one that Redis keeps refusing with a
    // command in its offline queue (quit() must not wait behind it).
    const redis = createRedis({ url: `redis://${credentials}127.0.0.1:${own.port}` });
    const refused = new Promise<void>((resolve) => redis.once('error', () => resolve()));
    const queued = redis.get('anything').then(
      () => 'answered',
      (err: Error) => `rejected: ${err.message}`,
    );
    await refused;
    const started = Date.now();
    const closed = await Promise.race([
      redis.close().then(() => 'closed'),
      new Promise((resolve) => setTimeout(() => resolve('still closing after 5 s'), 5_000)),
    ]);
    expect({ closed, status: redis.status }).toEqual({ closed: 'closed', status: 'end' });
    expect(Date.now() - started).toBeLessThan(3_000);
    expect(await queued).toMatch(/^rejected: /);
  });

  it('rediss:// speaks TLS, trusting the CA of REDIS_TLS_CA_FILE; without it the certificate is refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'redis-tls-'));
    const [certFile, keyFile] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
    await promisify(execFile)('openssl', [
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ]);
    const tlsRedis = await startOwnRedis({ password: PASSWORD, tls: { certFile, keyFile } });
    try {
      expect(tlsRedis.url).toMatch(/^rediss:\/\//);
      const redis = createRedis({ url: tlsRedis.url, tlsCa: readRedisTlsCa(certFile) });
      await connectRedis(redis);
      expect(await redis.ping()).toBe('PONG');
      await redis.close();
      const untrusted = await connectError(tlsRedis.url);
      expect(untrusted.message).toMatch(/^REDIS_URL: cannot connect to Redis/);
    } finally {
      await tlsRedis.close();
    }
  });
});
