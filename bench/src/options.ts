/**
 * Bench settings: one TypeBox schema keyed by environment variable names (like every service's
 * config), with command-line flags as aliases that win over the environment.
 */
import { parseArgs } from 'node:util';
import { loadConfig } from '@ingest/platform';
import { type Static, Type } from '@sinclair/typebox';

const int = (min: number, max: number, def: number, description: string) => Type.Integer({ minimum: min, maximum: max, default: def, description });

export const BenchSchema = Type.Object({
  KAFKA_BROKERS: Type.String({ minLength: 1, default: '127.0.0.1:9092' }),
  CLICKHOUSE_URL: Type.String({ minLength: 1, default: 'http://127.0.0.1:8123' }),
  CLICKHOUSE_USER: Type.String({ default: 'default' }),
  CLICKHOUSE_PASSWORD: Type.String({ default: '' }),
  REDIS_URL: Type.String({ minLength: 1, default: 'redis://127.0.0.1:6379' }),
  STACK_DIR: Type.String({ minLength: 1, default: '.local' }),
  BENCH_DURATION_S: int(5, 3600, 30, "measured window of the unpaced phase (the gateway's accept capacity), seconds"),
  BENCH_WARMUP_S: int(0, 600, 10, 'load before the window starts (JIT, consumer group joins), seconds'),
  BENCH_CONCURRENCY: int(1, 512, 24, 'HTTP requests in flight'),
  BENCH_EVENTS_PER_REQUEST: int(1, 100, 100, 'events per POST /v1/events'),
  BENCH_EVENT_BYTES: int(160, 4096, 300, 'approximate JSON size of one event'),
  BENCH_KAFKA_RECORDS: int(0, 100_000_000, 500_000, 'records for the raw Kafka producer baseline (0 skips it)'),
  // 1.5 M rows: at least 15 s of inserts on this machine (the writer target's span). With 200,000
  // (2 s) baseline B read 120,175, 101,423 and 87,186 rows/s in three back-to-back quiet runs on
  // 2026-11-29, which swung the writer's share from 61 % to 83 % with the writer itself steady.
  BENCH_CLICKHOUSE_ROWS: int(0, 100_000_000, 1_500_000, 'rows for the raw ClickHouse insert baseline (0 skips it)'),
  BENCH_CLICKHOUSE_BATCH: int(1, 1_000_000, 10_000, 'rows per insert in the ClickHouse baseline'),
  BENCH_ALLOWANCE_IDS: int(0, 10_000_000, 500_000, 'caller-chosen ids for the allowance phase (0 skips it); default the growth plan limit'),
  // 1.5 M: at least 15 s of rows after the first are queryable (1 M took 10.9-12.5 s on 2026-11-29).
  BENCH_WRITER_ROWS: int(0, 100_000_000, 1_500_000, 'records for the writer phase (storage stage alone; 0 skips it)'),
  BENCH_SEARCH_STEPS: int(0, 20, 4, 'paced steps of the lag-flat search (0 skips it)'),
  BENCH_SEARCH_WINDOW_S: int(5, 600, 20, 'measured window of each paced step, seconds'),
  BENCH_SEARCH_SETTLE_S: int(0, 60, 5, "paced load before each step's window starts, seconds"),
  BENCH_DEDUPE_MAX_MARKS: int(0, 100_000_000, 20_000, 'DEDUPE_MAX_MARKS_PER_PARTITION of the processor, small so the bound is reached (0: its default)'),
  BENCH_NOOP_DURATION_S: int(0, 600, 15, 'duration of the no-op fastify baseline (0 skips it), seconds'),
  BENCH_FRESHNESS_DURATION_S: int(0, 600, 30, 'duration of the freshness phase (0 skips it), seconds'),
  BENCH_FRESHNESS_RATE: int(0, 10_000_000, 0, 'events/s of the freshness phase (0: half the end-to-end rate with lag flat)'),
  BENCH_SOAK_DURATION_S: int(0, 7_200, 600, 'the soak: paced load at the lag-flat rate this long, memory read throughout (0 skips it), seconds'),
  BENCH_SOAK_RATE: int(0, 10_000_000, 0, 'events/s of the soak (0: the end-to-end rate with lag flat)'),
  BENCH_SOAK_INTERVAL_S: int(5, 600, 20, 'seconds between memory readings of the soak'),
  BENCH_PROBE_INTERVAL_MS: int(20, 10_000, 200, 'one probe event every this many ms'),
  BENCH_PROBE_POLL_MS: int(20, 5_000, 100, 'how often ClickHouse is asked for the probes (latency resolution)'),
  BENCH_DRAIN_TIMEOUT_S: int(0, 3600, 180, 'after the load stops, wait at most this long for the backlog to reach ClickHouse'),
  BENCH_PROGRESS_S: int(1, 600, 5, 'seconds between progress lines'),
  BENCH_SERVICES: Type.Union([Type.Literal('dist'), Type.Literal('tsx')], {
    default: 'dist',
    description: 'dist: the esbuild bundles production runs; tsx: the TypeScript sources',
  }),
  BENCH_PROFILE: Type.Boolean({ default: false, description: 'run the services with node --cpu-prof and summarise where their CPU went' }),
  BENCH_TENANT_ACCOUNTS: int(1, 100_000, 2_000, 'bench:tenants: accounts, created through the admin API'),
  BENCH_TENANT_ZIPF_S: Type.Number({
    minimum: 0,
    maximum: 4,
    default: 1,
    description: 'bench:tenants: the Zipf exponent s of the traffic share (rank k gets 1/k^s)',
  }),
  BENCH_TENANT_BUDGET: int(
    1_000,
    1_000_000_000,
    3_000_000,
    'bench:tenants: events the plans are sized for: each account gets the smallest plan covering its share of them',
  ),
  BENCH_TENANT_SIZES: Type.String({
    minLength: 3,
    default: '1:40,10:30,100:30',
    description: 'bench:tenants: events per request : share of requests, comma-separated',
  }),
  BENCH_TENANT_RETRY_PERCENT: int(0, 50, 3, 'bench:tenants: % of requests sent a second time (same ids) about a second later'),
  BENCH_TENANT_SEED: int(0, 2 ** 31 - 1, 1, 'bench:tenants: seed of the account, size and retry draws'),
  BENCH_TENANT_SETUP_CONCURRENCY: int(1, 256, 16, 'bench:tenants: admin API requests in flight while the accounts are created'),
  BENCH_BUILD: Type.Union([Type.Literal('auto'), Type.Literal('always'), Type.Literal('never')], {
    default: 'auto',
    description: 'auto: npm run build when a bundle is missing or older than the sources',
  }),
});

export type BenchOptions = Static<typeof BenchSchema>;
type BenchKey = keyof BenchOptions;

/** Flag -> variable. Flags are the variable without BENCH_ (and without the unit suffix). */
const FLAGS: Record<string, BenchKey> = {
  duration: 'BENCH_DURATION_S',
  warmup: 'BENCH_WARMUP_S',
  concurrency: 'BENCH_CONCURRENCY',
  'events-per-request': 'BENCH_EVENTS_PER_REQUEST',
  'event-bytes': 'BENCH_EVENT_BYTES',
  'kafka-records': 'BENCH_KAFKA_RECORDS',
  'clickhouse-rows': 'BENCH_CLICKHOUSE_ROWS',
  'clickhouse-batch': 'BENCH_CLICKHOUSE_BATCH',
  'allowance-ids': 'BENCH_ALLOWANCE_IDS',
  'writer-rows': 'BENCH_WRITER_ROWS',
  'search-steps': 'BENCH_SEARCH_STEPS',
  'search-window': 'BENCH_SEARCH_WINDOW_S',
  'search-settle': 'BENCH_SEARCH_SETTLE_S',
  'dedupe-max-marks': 'BENCH_DEDUPE_MAX_MARKS',
  'noop-duration': 'BENCH_NOOP_DURATION_S',
  'freshness-duration': 'BENCH_FRESHNESS_DURATION_S',
  'freshness-rate': 'BENCH_FRESHNESS_RATE',
  'soak-duration': 'BENCH_SOAK_DURATION_S',
  'soak-rate': 'BENCH_SOAK_RATE',
  'soak-interval': 'BENCH_SOAK_INTERVAL_S',
  'probe-interval': 'BENCH_PROBE_INTERVAL_MS',
  'probe-poll': 'BENCH_PROBE_POLL_MS',
  'drain-timeout': 'BENCH_DRAIN_TIMEOUT_S',
  progress: 'BENCH_PROGRESS_S',
  accounts: 'BENCH_TENANT_ACCOUNTS',
  'zipf-s': 'BENCH_TENANT_ZIPF_S',
  budget: 'BENCH_TENANT_BUDGET',
  sizes: 'BENCH_TENANT_SIZES',
  'retry-percent': 'BENCH_TENANT_RETRY_PERCENT',
  seed: 'BENCH_TENANT_SEED',
  'setup-concurrency': 'BENCH_TENANT_SETUP_CONCURRENCY',
  services: 'BENCH_SERVICES',
  build: 'BENCH_BUILD',
};

export function usage(): string {
  const lines = Object.entries(FLAGS).map(([flag, key]) => {
    const schema = BenchSchema.properties[key] as { default?: unknown; description?: string };
    return `  --${flag.padEnd(20)} ${key.padEnd(28)} ${schema.description ?? ''} (default ${String(schema.default)})`;
  });
  return [
    'usage: npm run bench -- [flags]     (every flag can also be set through its environment variable)',
    '',
    ...lines,
    `  --${'profile'.padEnd(20)} ${'BENCH_PROFILE'.padEnd(28)} ${BenchSchema.properties.BENCH_PROFILE.description ?? ''} (default false)`,
    '',
    'KAFKA_BROKERS, CLICKHOUSE_URL, REDIS_URL and STACK_DIR are read like the services read them.',
    'Other variables the services know (e.g. PROCESSOR_PARTITIONS_CONCURRENCY) pass through to them.',
  ].join('\n');
}

/** Returns undefined when --help was asked for. */
export function loadBenchOptions(argv: string[], env: Record<string, string | undefined>): BenchOptions | undefined {
  const { values } = parseArgs({
    args: argv,
    options: {
      help: { type: 'boolean', short: 'h' },
      profile: { type: 'boolean' },
      ...Object.fromEntries(Object.keys(FLAGS).map((f) => [f, { type: 'string' as const }])),
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) return undefined;
  const merged: Record<string, string | undefined> = { ...env };
  if (values.profile) merged.BENCH_PROFILE = 'true';
  for (const [flag, key] of Object.entries(FLAGS)) {
    const value = (values as Record<string, string | boolean | undefined>)[flag];
    if (typeof value === 'string') merged[key] = value;
  }
  return loadConfig(BenchSchema, merged);
}
