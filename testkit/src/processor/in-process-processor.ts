import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type ClickHouse, type Component, createLogger, createMetricsRegistry, REPO_ROOT } from '@ingest/platform';
import type { SuppressionList } from '@ingest/domain';
import { uniqueSuffix } from '../index.js';
// The processor (job runner, dedupe, storage) stores what a dashboard page reads: built with the
// builder its main.ts uses, from its public entry.
import { createProcessor } from '@ingest/processor';
import type { GatewayFixture } from '../gateway/gateway.fixture.js';

/**
 * The real processor in this process, on the gateway fixture's topics, database and Redis, with
 * consumer groups of its own. Started here; the caller stops the returned parts in order.
 */
export interface ProcessorForOptions {
  /** Also the billing-ledger copier (default off). */
  ledger?: boolean;
  /** What storage writes through (default the fixture's database), e.g. one that holds inserts. */
  ch?: ClickHouse;
  /** The storage consumer group (default a fresh one). */
  storageGroup?: string;
  /** The erasure suppression list storage checks (started by the caller); default none. */
  erasures?: SuppressionList;
  /** Redis key prefix of the processor's own state (the identity map's index among it); default none. */
  redisKeyPrefix?: string;
}

export async function startProcessorFor(gw: GatewayFixture, name: string, options: ProcessorForOptions = {}): Promise<Component[]> {
  // Its log goes to a file (ids only, like every log): a page that waits in vain for stored
  // events can then be explained from .local/test-artifacts/logs.
  const logDir = join(REPO_ROOT, '.local/test-artifacts/logs');
  mkdirSync(logDir, { recursive: true });
  const logger = createLogger({ service: name, level: 'info', destination: createWriteStream(join(logDir, `${name}.log`)) });
  const parts = createProcessor({
    kafka: gw.kafka.kafka,
    producer: gw.producer,
    ch: options.ch ?? gw.clickhouse.ch,
    redis: gw.redis,
    ...(options.redisKeyPrefix !== undefined ? { redisKeyPrefix: options.redisKeyPrefix } : {}),
    ...(options.erasures ? { erasures: options.erasures } : {}),
    logger,
    metrics: createMetricsRegistry(name),
    topicPrefix: gw.kafka.prefix,
    partitionsConsumedConcurrently: 3,
    groups: {
      jobs: `jobs-${uniqueSuffix()}`,
      storage: options.storageGroup ?? `storage-${uniqueSuffix()}`,
      dedupe: `dedupe-${uniqueSuffix()}`,
      // The audit log's copy into ClickHouse: the dashboard's Activity page reads it.
      audit: `processor-audit-${uniqueSuffix()}`,
      // The billing ledger's copy, for tests that read the ledger back (the admin API reads ClickHouse).
      ...(options.ledger ? { ledger: `processor-ledger-${uniqueSuffix()}` } : {}),
    },
    dedupe: { windowMs: 7 * 24 * 3600 * 1000 },
    accountSuspended: (accountId) => gw.controlPlane.accountById(accountId)?.suspension !== undefined,
  });
  for (const part of parts) await part.start();
  return parts;
}

/**
 * What a failed wait for stored events needs to be explained: the rows ClickHouse holds per
 * table and the end of the in-process processor's log. Register it with `onTestFailed`.
 */
export async function describePipeline(gw: GatewayFixture, name: string): Promise<string> {
  const counts = await Promise.all(
    ['events', 'usage_hourly'].map(async (table) => {
      try {
        const [row] = await gw.clickhouse.ch.query<{ n: string }>(`SELECT count() AS n FROM ${table}`);
        return `${table}: ${row?.n ?? '?'} rows`;
      } catch (err) {
        return `${table}: ${(err as Error).message}`;
      }
    }),
  );
  let log: string;
  try {
    log = readFileSync(join(REPO_ROOT, '.local/test-artifacts/logs', `${name}.log`), 'utf8')
      .split('\n')
      .slice(-40)
      .join('\n');
  } catch (err) {
    log = (err as Error).message;
  }
  return `ClickHouse ${gw.clickhouse.ch.database}: ${counts.join(', ')}\nlast lines of ${name}.log:\n${log}`;
}
