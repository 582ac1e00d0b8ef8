/**
 * Real servers: Kafka (control plane), Redis and the stack's ClickHouse. `ingest admin reader …`
 * in-process against the admin API on a real listener: on 18.16 it fails with the API's 409 and
 * its reason; on a current server it creates (password printed once), shows and removes.
 */
import type { AddressInfo } from 'node:net';
import { integrationEnv, createTestClickHouse, type TestClickHouse } from '@ingest/testkit';
import { type AdminTestStack, startAdminTestStack } from '@ingest/testkit/gateway';
import { serverHasSqlUsers } from '@ingest/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';

const TOKEN = 'cli-readers-admin-token-0123456789abcdef';
let stack: AdminTestStack;
let data: TestClickHouse;
let adminUrl: string;

beforeAll(async () => {
  [stack, data] = await Promise.all([startAdminTestStack(), createTestClickHouse()]);
  const env = integrationEnv();
  const app = await stack.app(TOKEN, {
    env: {
      CLICKHOUSE_URL: env.clickhouseUrl,
      CLICKHOUSE_DATABASE: data.database,
      CLICKHOUSE_ACCESS_USER: env.clickhouseUser,
      CLICKHOUSE_ACCESS_PASSWORD: env.clickhousePassword,
    },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  adminUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await stack?.close();
  await data?.cleanup();
});

async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const code = await runCli(argv, {
    env: { ADMIN_URL: adminUrl, ADMIN_TOKEN: TOKEN },
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
    fetch,
  });
  return { code, out, err };
}

describe('ingest admin reader', () => {
  it('create: refused with the reason on a server without row policies (18.16); created, shown and removed on a current one', async () => {
    const { id } = await stack.controlPlane.createAccount({ name: 'CLI reader', plan: 'free' });
    const [{ v: version = '0' } = { v: '0' }] = await data.ch.query<{ v: string }>('SELECT version() AS v');
    const created = await cli('reader', 'create', id);
    if (!serverHasSqlUsers(version)) {
      expect(created, JSON.stringify(created)).toMatchObject({ code: 1, out: '' });
      expect(created.err).toMatch(/409[\s\S]*cannot restrict a reader to one account's rows/);
      return;
    }
    expect(created.code, created.err).toBe(0);
    expect(created.out).toMatch(new RegExp(`user: +reader_${id}[\\s\\S]*password: +\\S{32}[\\s\\S]*will not be shown again`));
    expect((await cli('reader', 'show', id)).out).toContain(`ClickHouse reader reader_${id} of account ${id}`);
    expect((await cli('reader', 'remove', id)).out).toBe(`removed ClickHouse reader reader_${id} of account ${id}\n`);
    expect((await cli('reader', 'show', id)).out).toBe(`account ${id} has no ClickHouse reader\n`);
  });
});
