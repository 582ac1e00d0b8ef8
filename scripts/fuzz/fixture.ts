/**
 * The data around one fuzzing run of scripts/fuzz/run.sh, against the gateway process it
 * started (GATEWAY_URL) on the run's own topics, database and Redis keys:
 *
 *   seed     creates, through the public and admin APIs, what the fuzzer needs and prints it
 *            as KEY=VALUE lines: the fuzz account (plan growth) and its API key, a second
 *            account and key for the admin operations to change and revoke, a bulk job and a
 *            stored event (inserted into the run's `events` table as the processor writes it,
 *            since no processor runs) so that their read routes answer 200 too.
 *   cleanup  deletes the run's Kafka topics, ClickHouse database and Redis keys. Idempotent.
 *
 * Configuration is the gateway's environment (KAFKA_*, CLICKHOUSE_*, REDIS_*, ADMIN_TOKEN)
 * plus GATEWAY_URL, ADMIN_URL (the admin listener) and FUZZ_CLIENT_ADDRESS (sent as
 * X-Forwarded-For, like the fuzzer does).
 */
import { EVENT_RECORD_VERSION, type EventRecord } from '@ingest/schemas';
import {
  allTopicSpecs,
  ClickHouseConfig,
  createClickHouse,
  createKafkaClientFromConfig,
  createLogger,
  createRedis,
  deleteTopics,
  dropDatabase,
  KafkaConfig,
  loadConfig,
  RedisConfig,
} from '@ingest/platform';
import { Type } from '@sinclair/typebox';
import { API_KEY_SCOPES, EVENT_COLUMNS, toEventLine } from '@ingest/domain';

const config = loadConfig(
  Type.Object({
    ...KafkaConfig,
    ...ClickHouseConfig,
    ...RedisConfig,
    GATEWAY_URL: Type.String({ default: '' }),
    ADMIN_URL: Type.String({ default: '' }),
    ADMIN_TOKEN: Type.String({ default: '' }),
    FUZZ_CLIENT_ADDRESS: Type.String({ minLength: 1 }),
  }),
);

/** The stored event's id; fixed, since the database is the run's own. */
const STORED_EVENT_ID = 'fuzz-stored-event-1';

interface Reply {
  status: number;
  body: Record<string, unknown>;
}

async function call(method: string, path: string, token: string, body?: unknown): Promise<Reply> {
  // The admin API has a listener of its own.
  const base = path.startsWith('/admin/') ? config.ADMIN_URL : config.GATEWAY_URL;
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      'x-forwarded-for': config.FUZZ_CLIENT_ADDRESS,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  return { status: res.status, body: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>) };
}

async function expectStatus(status: number, method: string, path: string, token: string, body?: unknown): Promise<Record<string, unknown>> {
  const reply = await call(method, path, token, body);
  if (reply.status !== status) {
    throw new Error(`${method} ${path}: expected ${status}, got ${reply.status}: ${JSON.stringify(reply.body)}`);
  }
  return reply.body;
}

async function newAccount(name: string, plan: string): Promise<{ accountId: string; keyId: string; apiKey: string }> {
  const account = await expectStatus(201, 'POST', '/admin/v1/accounts', config.ADMIN_TOKEN, { name, plan });
  const accountId = String(account.id);
  // Every scope, so the fuzzer reaches every route's handler (not only its 403 for a missing scope).
  const created = await expectStatus(201, 'POST', `/admin/v1/accounts/${accountId}/keys`, config.ADMIN_TOKEN, { name: 'fuzz', scopes: [...API_KEY_SCOPES] });
  return { accountId, keyId: String((created.key as { id: string }).id), apiKey: String(created.apiKey) };
}

/** Until `check` passes: the gateway learns new keys from the control-plane topic. */
async function eventually(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function seed(): Promise<void> {
  const fuzz = await newAccount('Fuzz account', 'growth');
  const target = await newAccount('Fuzz admin target', 'free');
  await eventually('the new API key', async () => (await call('GET', '/v1/usage', fuzz.apiKey)).status === 200);

  const receipt = await expectStatus(202, 'POST', '/v1/events/bulk', fuzz.apiKey, {
    events: [{ eventName: 'Fuzz Seeded', email: 'ada@example.com', eventId: 'fuzz-bulk-1' }],
  });
  const jobId = String(receipt.jobId);
  await expectStatus(200, 'GET', `/v1/jobs/${jobId}`, fuzz.apiKey);

  const now = Date.now();
  const record: EventRecord = {
    v: EVENT_RECORD_VERSION,
    accountId: fuzz.accountId,
    eventId: STORED_EVENT_ID,
    eventName: 'Fuzz Stored',
    email: 'ada@example.com',
    domain: 'example.com',
    timestampMs: now - 60_000,
    receivedAtMs: now - 59_000,
    properties: { plan: 'pro', seats: 3, trial: false, nested: { list: [1, 'two', null] } },
    source: 'api',
    jobId: null,
  };
  const ch = createClickHouse({
    url: config.CLICKHOUSE_URL,
    username: config.CLICKHOUSE_USER,
    password: config.CLICKHOUSE_PASSWORD,
    database: config.CLICKHOUSE_DATABASE,
  });
  try {
    await ch.insertTabSeparated('events', EVENT_COLUMNS, [toEventLine(record, now)]);
  } finally {
    await ch.close();
  }
  await expectStatus(200, 'GET', `/v1/events/${STORED_EVENT_ID}`, fuzz.apiKey);

  const lines = {
    FUZZ_ACCOUNT_ID: fuzz.accountId,
    FUZZ_API_KEY: fuzz.apiKey,
    FUZZ_TARGET_ACCOUNT_ID: target.accountId,
    FUZZ_TARGET_KEY_ID: target.keyId,
    FUZZ_JOB_ID: jobId,
    FUZZ_EVENT_ID: STORED_EVENT_ID,
  };
  for (const [name, value] of Object.entries(lines)) console.log(`${name}=${value}`);
}

async function cleanup(): Promise<void> {
  const prefix = config.KAFKA_TOPIC_PREFIX;
  const redisPrefix = config.REDIS_KEY_PREFIX;
  // An empty prefix would mean the shared topics and keys of `npm start`: never delete those.
  if (prefix === '' || redisPrefix === '' || config.CLICKHOUSE_DATABASE === 'ingest') {
    throw new Error('cleanup needs the run-specific KAFKA_TOPIC_PREFIX, REDIS_KEY_PREFIX and CLICKHOUSE_DATABASE');
  }
  const logger = createLogger({ service: 'fuzz-cleanup', level: 'warn' });
  const kafka = createKafkaClientFromConfig(config, 'fuzz-cleanup', logger);
  const redis = createRedis({ url: config.REDIS_URL });
  const failures: string[] = [];
  // A few tries each: a server may be briefly away (the chaos tests stop ClickHouse on purpose).
  const attempt = async (what: string, work: () => Promise<unknown>) => {
    for (let tries = 1; ; tries++) {
      try {
        await work();
        return;
      } catch (err) {
        if (tries === 5) {
          failures.push(`${what}: ${(err as Error).message}`);
          return;
        }
        await new Promise((r) => setTimeout(r, 2_000));
      }
    }
  };
  await attempt('kafka topics', () =>
    deleteTopics(
      kafka,
      allTopicSpecs().map((s) => prefix + s.name),
    ),
  );
  await attempt('clickhouse database', () =>
    dropDatabase({ url: config.CLICKHOUSE_URL, username: config.CLICKHOUSE_USER, password: config.CLICKHOUSE_PASSWORD, database: config.CLICKHOUSE_DATABASE }),
  );
  await attempt('redis keys', async () => {
    if (redis.status === 'wait') await redis.connect();
    // The run's keys, and the rate-limit counter of its own client address (see schemathesis.toml;
    // 127.0.0.1's counter is shared, so it is left to expire).
    const keys = config.FUZZ_CLIENT_ADDRESS === '127.0.0.1' ? [] : [`ratelimit:${config.FUZZ_CLIENT_ADDRESS}`];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', `${redisPrefix}*`, 'COUNT', 1000);
      keys.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    for (let i = 0; i < keys.length; i += 500) await redis.del(...keys.slice(i, i + 500));
  });
  await redis.close().catch(() => undefined);
  if (failures.length > 0) throw new Error(`cleanup incomplete: ${failures.join('; ')}`);
}

const command = process.argv[2];
if (command === 'seed') await seed();
else if (command === 'cleanup') await cleanup();
else {
  console.error('usage: tsx scripts/fuzz/fixture.ts seed|cleanup');
  process.exitCode = 2;
}
