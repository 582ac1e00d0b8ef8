/**
 * The bench's own corner of the shared servers: a topic prefix, a ClickHouse database, a Redis
 * key prefix, consumer groups and a loopback address, all unique per run, created here and
 * removed by `teardown` (also for a run that died, see leftovers.ts).
 */
import {
  type ClickHouse,
  CLICKHOUSE_MIGRATIONS_DIR,
  deleteConsumerGroups,
  deleteTopics,
  dropDatabase,
  ensureTopics,
  globEscape,
  type KafkaClient,
  type Logger,
  migrate,
  type Redis,
  sql,
  withAdmin,
} from '@ingest/platform';
import { allowanceKeys, allowancePeriod } from '@ingest/domain';
import { uniqueSuffix } from '@ingest/testkit';
import type { HttpClient } from './http-client.js';
import { randomLoopbackAddress } from './http-client.js';

export interface BenchNames {
  runId: string;
  topicPrefix: string;
  baselineTopic: string;
  database: string;
  redisPrefix: string;
  /** Every consumer group of the run starts with this. */
  groupPrefix: string;
  groups: { storage: string; dedupe: string; jobs: string };
  clientId: string;
  /** Source address of every request to the gateway. */
  localAddress: string;
}

export function benchNames(): BenchNames {
  const runId = uniqueSuffix();
  const groupPrefix = `bench-${runId}-`;
  const topicPrefix = `bench.${runId}.`;
  return {
    runId,
    topicPrefix,
    baselineTopic: `${topicPrefix}baseline`,
    database: `bench_${runId}`,
    redisPrefix: `bench:${runId}:`,
    groupPrefix,
    groups: { storage: `${groupPrefix}storage`, dedupe: `${groupPrefix}dedupe`, jobs: `${groupPrefix}jobs` },
    clientId: `bench-${runId}`,
    localAddress: randomLoopbackAddress(),
  };
}

export interface ServerAddresses {
  clickhouseUrl: string;
  clickhouseUser: string;
  clickhousePassword: string;
}

/** Every production topic (full partition counts) plus the baseline topic, and the migrated database. */
export async function provision(names: BenchNames, kafka: KafkaClient, servers: ServerAddresses, logger: Logger): Promise<void> {
  await ensureTopics(kafka, { prefix: names.topicPrefix, logger });
  await ensureTopics(kafka, {
    prefix: names.topicPrefix,
    specs: [{ name: 'baseline', partitions: 12, config: {}, purpose: 'raw producer baseline' }],
    logger,
  });
  await migrate({
    url: servers.clickhouseUrl,
    username: servers.clickhouseUser,
    password: servers.clickhousePassword,
    database: names.database,
    dir: CLICKHOUSE_MIGRATIONS_DIR,
    logger,
  });
}

/**
 * The services' environment: the run's names, free ports, a random admin token, a per-address
 * rate limit too high to matter and no allowance reconciler (the bench resets the counters itself).
 * Anything else set in the bench's own environment (e.g. PROCESSOR_PARTITIONS_CONCURRENCY)
 * passes through.
 */
export function serviceEnv(
  names: BenchNames,
  servers: ServerAddresses,
  o: {
    kafkaBrokers: string;
    redisUrl: string;
    adminToken: string;
    ports: { gateway: number; gatewayOps: number; console: number; consoleOps: number; processorOps: number; admin: number };
  },
): Record<string, string | undefined> {
  return {
    ...process.env,
    LOG_LEVEL: 'warn',
    KAFKA_BROKERS: o.kafkaBrokers,
    KAFKA_TOPIC_PREFIX: names.topicPrefix,
    KAFKA_CLIENT_ID: names.clientId,
    CLICKHOUSE_URL: servers.clickhouseUrl,
    CLICKHOUSE_USER: servers.clickhouseUser,
    CLICKHOUSE_PASSWORD: servers.clickhousePassword,
    CLICKHOUSE_DATABASE: names.database,
    REDIS_URL: o.redisUrl,
    REDIS_KEY_PREFIX: names.redisPrefix,
    GATEWAY_HOST: '127.0.0.1',
    GATEWAY_PORT: String(o.ports.gateway),
    GATEWAY_OPS_HOST: '127.0.0.1',
    GATEWAY_OPS_PORT: String(o.ports.gatewayOps),
    // The console serves the admin API the run creates its accounts through.
    CONSOLE_HOST: '127.0.0.1',
    CONSOLE_PORT: String(o.ports.console),
    CONSOLE_OPS_HOST: '127.0.0.1',
    CONSOLE_OPS_PORT: String(o.ports.consoleOps),
    PROCESSOR_OPS_HOST: '127.0.0.1',
    PROCESSOR_OPS_PORT: String(o.ports.processorOps),
    PROCESSOR_STORAGE_GROUP: names.groups.storage,
    PROCESSOR_DEDUPE_GROUP: names.groups.dedupe,
    PROCESSOR_JOBS_GROUP: names.groups.jobs,
    ADMIN_TOKEN: o.adminToken,
    ADMIN_HOST: '127.0.0.1',
    ADMIN_PORT: String(o.ports.admin),
    RATE_LIMIT_PER_MINUTE: '1000000000',
    // The per-account ceilings are not what is measured either (their one Redis call per request is).
    ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_GROWTH: '1000000000',
    ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_GROWTH: '1000000000',
    USAGE_RECONCILE_INTERVAL_MS: '0',
  };
}

export interface TeardownNames {
  topicPrefix: string;
  groupPrefix: string;
  database: string;
  redisPrefix: string;
  localAddress: string;
}

/** Topics under the prefix, the run's groups, its database and Redis keys. Each step on its own. */
export async function teardown(names: TeardownNames, kafka: KafkaClient, redis: Redis, servers: ServerAddresses): Promise<string[]> {
  const problems: string[] = [];
  const step = async (what: string, work: () => Promise<unknown>) => {
    await work().catch((err: unknown) => problems.push(`${what}: ${(err as Error).message}`));
  };
  await step('consumer groups', () => deleteConsumerGroups(kafka, (g) => g.startsWith(names.groupPrefix)));
  await step('topics', async () => {
    const ours = (await withAdmin(kafka, (admin) => admin.listTopics())).filter((t) => t.startsWith(names.topicPrefix));
    await deleteTopics(kafka, ours);
  });
  await step('clickhouse database', () =>
    dropDatabase({ url: servers.clickhouseUrl, username: servers.clickhouseUser, password: servers.clickhousePassword, database: names.database }),
  );
  await step('redis keys', async () => {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${globEscape(names.redisPrefix)}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
    // @fastify/rate-limit keys by client address under its own namespace.
    await redis.unlink(`ratelimit:${names.localAddress}`);
  });
  return problems;
}

export interface BenchAccount {
  accountId: string;
  apiKey: string;
}

/**
 * A growth-plan account and a key through the admin API (its own listener, `admin`), usable
 * once /v1/usage on the public API (`http`) accepts the key.
 */
export async function createAccount(admin: HttpClient, http: HttpClient, adminToken: string, name: string): Promise<BenchAccount> {
  const auth = { authorization: `Bearer ${adminToken}` };
  const account = await admin.request('POST', '/admin/v1/accounts', { body: JSON.stringify({ name, plan: 'growth' }), headers: auth });
  if (account.status !== 201) throw new Error(`POST /admin/v1/accounts answered ${account.status}: ${account.body}`);
  const accountId = (JSON.parse(account.body) as { id: string }).id;
  const key = await admin.request('POST', `/admin/v1/accounts/${accountId}/keys`, { body: JSON.stringify({ name: 'bench' }), headers: auth });
  if (key.status !== 201) throw new Error(`POST /admin/v1/accounts/${accountId}/keys answered ${key.status}: ${key.body}`);
  const apiKey = (JSON.parse(key.body) as { apiKey: string }).apiKey;
  const deadline = Date.now() + 15_000;
  for (;;) {
    const usage = await http.request('GET', '/v1/usage', { headers: { authorization: `Bearer ${apiKey}` } });
    if (usage.status === 200) return { accountId, apiKey };
    if (Date.now() > deadline) throw new Error(`the new key was still refused after 15 s (GET /v1/usage answered ${usage.status})`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The growth plan allows 500,000 events a month; the bench sends millions. The allowance check
 * itself (one Lua script per request) stays in the measured path: only its counter is set back
 * to 0 every `intervalMs`, far below the limit at any rate this machine reaches.
 */
export function startAllowanceReset(redis: Redis, redisPrefix: string, accountIds: string[], intervalMs = 1_000): { stop(): Promise<void> } {
  const reset = async () => {
    const period = allowancePeriod(Date.now()).id;
    await Promise.all(accountIds.map((id) => redis.set(allowanceKeys(id, period, redisPrefix).counter, '0')));
  };
  let pending: Promise<void> = reset();
  const timer = setInterval(() => {
    pending = pending.then(reset).catch(() => {});
  }, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await pending.catch(() => {});
    },
  };
}

/** One section of Redis's INFO, read once: a numeric field by name (NaN when absent). */
export async function redisInfo(redis: Redis, section: string): Promise<(name: string) => number> {
  const info = await redis.info(section);
  return (name) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
}

/** Rows of one account in the bench database's `events` table (duplicates included: no FINAL). */
export async function countRows(ch: ClickHouse, accountId: string): Promise<number> {
  const [row] = await ch.query<{ n: string }>(sql`SELECT count() AS n FROM events WHERE account_id = ${accountId}`);
  return Number(row?.n ?? 0);
}
