/**
 * Real servers: Kafka (control plane), Redis, and the stack's ClickHouse (18.16 here; a current
 * server where CLICKHOUSE_URL points at one). A per-account reader is made only where the server
 * can restrict it to its account's rows: on 18.16 the admin API refuses it, and this file shows
 * why (18.16 ignores a users.xml row filter: a reader so configured reads every account). On a
 * current server it creates the reader and checks, logged in as it, what it sees and may do.
 */
import { createHash } from 'node:crypto';
import { mkdir, rm, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ClickHouse, createBatchConsumer, createClickHouse, serverHasSqlUsers } from '@ingest/platform';
import {
  createTestClickHouse,
  integrationEnv,
  stackDir,
  storedEvent,
  storeEvents,
  type TestClickHouse,
  testLogger,
  uniqueSuffix,
  waitFor,
} from '@ingest/testkit';
import { type AdminTestStack, startAdminTestStack } from '@ingest/testkit/gateway';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const TOKEN = 'admin-secret-token-for-the-clickhouse-reader-tests';
const auth = { authorization: `Bearer ${TOKEN}` };

let stack: AdminTestStack;
let data: TestClickHouse;
let app: FastifyInstance;
let version: string;
let accountA: string;
let accountB: string;

beforeAll(async () => {
  [stack, data] = await Promise.all([startAdminTestStack(), createTestClickHouse()]);
  const env = integrationEnv();
  app = await stack.app(TOKEN, {
    env: {
      CLICKHOUSE_URL: env.clickhouseUrl,
      CLICKHOUSE_DATABASE: data.database,
      CLICKHOUSE_ACCESS_USER: env.clickhouseUser,
      CLICKHOUSE_ACCESS_PASSWORD: env.clickhousePassword,
    },
  });
  const create = async (name: string) =>
    (await app.inject({ method: 'POST', url: '/admin/v1/accounts', headers: auth, payload: { name, plan: 'free' } })).json<{ id: string }>().id;
  [accountA, accountB] = await Promise.all([create('Reader A'), create('Reader B')]);
  await storeEvents(data.ch, [storedEvent(accountA, { eventId: 'evt-a' }), storedEvent(accountB, { eventId: 'evt-b' })]);
  [{ v: version = '0' } = { v: '0' }] = await data.ch.query<{ v: string }>('SELECT version() AS v');
});

afterAll(async () => {
  await stack?.close();
  await data?.cleanup();
});

const seen = (res: { statusCode: number; body: string }) => `${res.statusCode} ${res.body}`;

describe('the admin API’s ClickHouse reader: refusals', () => {
  it('answers 404 for an unknown account', async () => {
    const res = await app.inject({ method: 'POST', url: '/admin/v1/accounts/acc_nope/clickhouse-reader', headers: auth });
    expect(seen(res)).toMatch(/^404 /);
  });

  it('answers 409 naming CLICKHOUSE_ACCESS_USER when its password is wrong (the real server refuses the login)', async () => {
    const wrong = await stack.app(TOKEN, {
      env: {
        CLICKHOUSE_URL: integrationEnv().clickhouseUrl,
        CLICKHOUSE_ACCESS_USER: integrationEnv().clickhouseReader.user,
        CLICKHOUSE_ACCESS_PASSWORD: 'not-its-password',
      },
    });
    const res = await wrong.inject({ method: 'GET', url: `/admin/v1/accounts/${accountA}/clickhouse-reader`, headers: auth });
    expect(seen(res)).toMatch(/^409 .*CLICKHOUSE_ACCESS_USER cannot log in/);
  });

  it('answers 409 naming CLICKHOUSE_ACCESS_USER when the console has no user that may manage users', async () => {
    const bare = await stack.app(TOKEN, { env: { CLICKHOUSE_URL: integrationEnv().clickhouseUrl } });
    const res = await bare.inject({ method: 'POST', url: `/admin/v1/accounts/${accountA}/clickhouse-reader`, headers: auth });
    expect(seen(res)).toMatch(/^409 .*CLICKHOUSE_ACCESS_USER/);
  });
});

/** Logs in as `user` and answers each query's rows, or its error text (readers' answers are compared, not thrown). */
async function asUser(user: string, password: string, queries: string[]): Promise<string[]> {
  const ch = createClickHouse({ url: integrationEnv().clickhouseUrl, username: user, password, database: data.database });
  try {
    const out: string[] = [];
    for (const q of queries)
      out.push(
        await ch.query(q).then(
          (rows) => JSON.stringify(rows),
          (err: unknown) => `error: ${String(err)}`,
        ),
      );
    return out;
  } finally {
    await ch.close();
  }
}

// One test per server kind, chosen by the server's measured version (not skipped: each server runs the checks it can).
describe('a per-account reader is made only where the server restricts it to its account', () => {
  it('18.16: every reader route answers 409 naming the version, and none is made; or, on a current server, the reader sees its rows only', async () => {
    if (serverHasSqlUsers(version)) {
      await currentServerChecks();
      return;
    }
    for (const [method, url] of [
      ['POST', `/admin/v1/accounts/${accountA}/clickhouse-reader`],
      ['POST', `/admin/v1/accounts/${accountA}/clickhouse-reader/rotate`],
      ['GET', `/admin/v1/accounts/${accountA}/clickhouse-reader`],
      ['DELETE', `/admin/v1/accounts/${accountA}/clickhouse-reader`],
    ] as const) {
      const res = await app.inject({ method, url, headers: auth });
      expect(seen(res)).toMatch(new RegExp(`^409 .*ClickHouse ${version.replaceAll('.', '\\.')} cannot restrict a reader`));
    }
    // Nothing reached the server: no SQL users there, and no users.d file was written.
    expect(await asUser(`reader_${accountA}`, 'x', ['SELECT 1'])).toEqual([expect.stringMatching(/^error: .*(Unknown user|password)/i)]);
  });

  it('why 18.16 refuses: it ignores a users.xml row filter, so a user with one reads every account (written to the stack’s users.d)', async () => {
    if (serverHasSqlUsers(version)) return; // Current servers enforce row policies (the test above checks them).
    // users.d next to the stack's users.xml: ClickHouse merges and reloads it by itself (every few seconds).
    const dir = process.env.CLICKHOUSE_USERS_D_DIR ?? join(stackDir(), 'clickhouse', 'etc', 'users.d');
    const user = `rdx_${uniqueSuffix()}`;
    const password = `pw-${uniqueSuffix()}`;
    const file = join(dir, `${user}.xml`);
    const filters = ['events', 'events_dedup'].map((t) => `<${t}><filter>account_id = '${accountA}'</filter></${t}>`).join('');
    // The first directory mkdir made (undefined: it was there): removed again afterwards.
    const made = await mkdir(dir, { recursive: true });
    await writeFile(
      file,
      `<?xml version="1.0"?><yandex><users><${user}><password_sha256_hex>${createHash('sha256').update(password).digest('hex')}</password_sha256_hex>` +
        `<networks><ip>::1</ip><ip>127.0.0.1</ip></networks><profile>readonly</profile><quota>default</quota>` +
        `<allow_databases><database>${data.database}</database></allow_databases><databases><${data.database}>${filters}</${data.database}></databases>` +
        `</${user}></users></yandex>\n`,
    );
    try {
      await waitFor(
        async () => {
          const [answer = ''] = await asUser(user, password, ['SELECT 1 AS n']);
          if (!answer.startsWith('[')) throw new Error(answer.slice(0, 300));
          return true;
        },
        { description: `user ${user} of ${file} to log in (CLICKHOUSE_USERS_D_DIR: the stack's users.d)`, timeoutMs: 20_000 },
      );
      const [events, other] = await asUser(user, password, [
        'SELECT DISTINCT account_id FROM events ORDER BY account_id',
        'SELECT count() AS n FROM default.nonexistent_table',
      ]);
      expect(JSON.parse(events ?? '[]')).toEqual([accountA, accountB].sort().map((account_id) => ({ account_id })));
      // What 18.16 does enforce for such a user: its database only (allow_databases).
      expect(other).toMatch(/Access denied to database default/);
    } finally {
      await rm(file, { force: true });
      // rmdir: only if empty (a file someone else put there stays).
      if (made) await rmdir(made).catch(() => undefined);
    }
  });
});

/** A current server (20.4+): create, read as the reader, the limits, rotate, remove. */
async function currentServerChecks(): Promise<void> {
  const url = `/admin/v1/accounts/${accountA}/clickhouse-reader`;
  const created = await app.inject({ method: 'POST', url, headers: auth });
  expect(seen(created)).toMatch(/^201 /);
  const { user, password } = created.json<{ user: string; password: string }>();
  expect(seen(await app.inject({ method: 'POST', url, headers: auth }))).toMatch(/^409 .*exists/);
  const [events, dedup, audit, setting, others] = await asUser(user, password, [
    'SELECT DISTINCT account_id FROM events',
    'SELECT DISTINCT account_id FROM events_dedup',
    'SELECT count() FROM audit_log',
    'SELECT 1 SETTINGS max_result_rows = 1000000000',
    "SELECT value FROM system.settings WHERE name = 'max_concurrent_queries_for_user'",
  ]);
  expect(JSON.parse(events ?? '[]')).toEqual([{ account_id: accountA }]);
  expect(JSON.parse(dedup ?? '[]')).toEqual([{ account_id: accountA }]);
  expect(audit).toMatch(/^error: .*(ACCESS_DENIED|Not enough privileges)/);
  expect(setting).toMatch(/^error: .*readonly/);
  expect(others).toContain('2');
  // Everyone else keeps every row (the all-rows policy): the service's own user sees both accounts.
  expect((await data.ch.query('SELECT DISTINCT account_id FROM events')).length).toBe(2);
  const rotated = await app.inject({ method: 'POST', url: `${url}/rotate`, headers: auth });
  expect(seen(rotated)).toMatch(/^200 /);
  expect(await asUser(user, password, ['SELECT 1'])).toEqual([expect.stringMatching(/^error: /)]);
  expect(await asUser(user, rotated.json<{ password: string }>().password, ['SELECT 1 AS n'])).toEqual(['[{"n":1}]']);
  expect(seen(await app.inject({ method: 'DELETE', url, headers: auth }))).toMatch(/^200 .*"exists":false/);
  expect(seen(await app.inject({ method: 'GET', url, headers: auth }))).toMatch(/^200 .*"exists":false/);
}

/**
 * The route's SQL and answers for a current server, through a recording stand-in of its access
 * SQL (the machine's stack is 18.16): it answers `version()` as 26.9 and `system.users` from what
 * it was told, and fails a command as the server would when told to. Whether the statements do
 * what they say is for a current server (the test above) and, their syntax, the chdb catalogue.
 */
function recordingServer(options: { failWith?: string } = {}) {
  const users = new Set<string>();
  const statements: string[] = [];
  const open = (): ClickHouse =>
    ({
      async query(q: string) {
        if (q.includes('version()')) return [{ v: '26.9.1.1' }];
        const name = /name = '([^']+)'/.exec(q)?.[1] ?? '';
        return [{ n: users.has(name) ? 1 : 0 }];
      },
      async command(q: string) {
        statements.push(q);
        if (options.failWith && q.startsWith('GRANT')) throw new Error(options.failWith);
        const created = /^CREATE USER `([^`]+)`/.exec(q)?.[1];
        if (created) users.add(created);
        const dropped = /^DROP USER IF EXISTS `([^`]+)`/.exec(q)?.[1];
        if (dropped) users.delete(dropped);
      },
      async close() {},
    }) as unknown as ClickHouse;
  return { open, statements, users };
}

describe('the reader routes on a current server (a recording stand-in of its access SQL)', () => {
  it('creates (password once, only its SHA-256 sent), refuses a second, rotates, removes; all audited', async () => {
    const server = recordingServer();
    const current = await stack.app(TOKEN, { env: { CLICKHOUSE_DATABASE: data.database }, openClickHouseAccess: server.open });
    const url = `/admin/v1/accounts/${accountB}/clickhouse-reader`;
    const created = await current.inject({ method: 'POST', url, headers: auth });
    expect(seen(created)).toMatch(/^201 /);
    const body = created.json<{ user: string; password: string; tables: string[]; exists: boolean }>();
    expect(body).toMatchObject({
      user: `reader_${accountB}`,
      exists: true,
      tables: ['events', 'events_dedup', 'usage_hourly', 'events_daily', 'billing_ledger'],
    });
    const all = server.statements.join('\n');
    expect(all).not.toContain(body.password);
    expect(all).toContain(createHash('sha256').update(body.password).digest('hex'));
    expect(server.statements.filter((q) => q.includes(`AS RESTRICTIVE FOR SELECT USING account_id = '${accountB}'`))).toHaveLength(5);
    expect(seen(await current.inject({ method: 'POST', url, headers: auth }))).toMatch(/^409 .*exists/);
    expect(seen(await current.inject({ method: 'GET', url, headers: auth }))).toMatch(/^200 .*"exists":true/);
    const rotated = await current.inject({ method: 'POST', url: `${url}/rotate`, headers: auth });
    expect(seen(rotated)).toMatch(/^200 /);
    const newPassword = rotated.json<{ password: string }>().password;
    expect(newPassword).not.toBe(body.password);
    expect(server.statements.at(-1)).toBe(
      `ALTER USER \`reader_${accountB}\` IDENTIFIED WITH sha256_hash BY '${createHash('sha256').update(newPassword).digest('hex')}'`,
    );
    expect(seen(await current.inject({ method: 'DELETE', url, headers: auth }))).toMatch(/^200 .*"exists":false/);
    expect(server.users.size).toBe(0);
    expect(seen(await current.inject({ method: 'DELETE', url, headers: auth }))).toMatch(/^404 /);
    expect(seen(await current.inject({ method: 'POST', url: `${url}/rotate`, headers: auth }))).toMatch(/^404 /);
    // The audit log's topic: the three changes, naming the user and never a password.
    const audit: { action: string; accountId: string; target: string }[] = [];
    const consumer = createBatchConsumer(stack.kafka.kafka, {
      name: 'test-audit-reader',
      groupId: `audit-${uniqueSuffix()}`,
      topics: [stack.kafka.topic('auditLog')],
      logger: testLogger(),
      handleBatch: async (messages) => {
        for (const m of messages) audit.push(JSON.parse(m.value?.toString() ?? 'null') as (typeof audit)[number]);
      },
    });
    await consumer.start();
    try {
      const mine = () => audit.filter((r) => r.accountId === accountB && r.action.startsWith('clickhouse_reader.')).map((r) => `${r.action} ${r.target}`);
      await waitFor(() => mine().length >= 3 || undefined, {
        description: `three reader records in the audit topic (seen: ${JSON.stringify(audit)})`,
        timeoutMs: 20_000,
      });
      expect(mine()).toEqual(['create', 'rotate', 'remove'].map((a) => `clickhouse_reader.${a} reader_${accountB}`));
      expect(JSON.stringify(audit)).not.toContain(newPassword);
    } finally {
      await consumer.stop();
    }
  });

  it('a refused grant (the access user lacks a right) answers 409 naming CLICKHOUSE_ACCESS_USER and leaves no user behind', async () => {
    const server = recordingServer({ failWith: 'Code: 497. DB::Exception: ingest_access: Not enough privileges. (ACCESS_DENIED)' });
    const current = await stack.app(TOKEN, { env: { CLICKHOUSE_DATABASE: data.database }, openClickHouseAccess: server.open });
    const res = await current.inject({ method: 'POST', url: `/admin/v1/accounts/${accountA}/clickhouse-reader`, headers: auth });
    expect(seen(res)).toMatch(/^409 .*CLICKHOUSE_ACCESS_USER cannot log in or may not manage this reader \(ClickHouse code 497\)/);
    expect(server.users.size).toBe(0);
    expect(server.statements.at(-1)).toMatch(/^DROP SETTINGS PROFILE IF EXISTS `reader_/);
  });
});
