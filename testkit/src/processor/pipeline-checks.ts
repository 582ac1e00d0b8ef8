/**
 * What a chaos test reads back: the pipeline's progress (committed offsets against end offsets,
 * with the product's own waitForPipeline) and the counts in ClickHouse, the way docs/clickhouse.md tells
 * data engineers to count.
 */
import { type ClickHouse, createEndOffsetsReader, type KafkaClient, raw, type SqlFragment, sql } from '@ingest/platform';
import type { TestKafka } from '../index.js';
import { waitForPipeline } from '@ingest/processor';
import type { ProcessorSetup } from '../processes/processor-process.js';

export interface EventCounts {
  /** uniqExact(event_id): distinct events stored. */
  distinct: number;
  /** count() FROM events FINAL. */
  final: number;
  /** count() FROM events_dedup. */
  view: number;
  /** uniqExactMerge(events) FROM usage_hourly: metered usage. */
  metered: number;
  /** count() without FINAL: rows inserted and not merged away yet. */
  rawRows: number;
}

/** `where` narrows the event counts (e.g. raw(sql`AND job_id = ${id}`)); metered usage is per account. */
export async function eventCounts(ch: ClickHouse, accountId: string, where: SqlFragment = raw('')): Promise<EventCounts> {
  const one = async (query: string) => Number((await ch.query<{ n: string }>(query))[0]?.n ?? 0);
  const [distinct, rawRows, final, view, metered] = await Promise.all([
    one(sql`SELECT uniqExact(event_id) AS n FROM events WHERE account_id = ${accountId} ${where}`),
    one(sql`SELECT count() AS n FROM events WHERE account_id = ${accountId} ${where}`),
    one(sql`SELECT count() AS n FROM events FINAL WHERE account_id = ${accountId} ${where}`),
    one(sql`SELECT count() AS n FROM events_dedup WHERE account_id = ${accountId} ${where}`),
    one(sql`SELECT uniqExactMerge(events) AS n FROM usage_hourly WHERE account_id = ${accountId}`),
  ]);
  return { distinct, final, view, metered, rawRows };
}

/**
 * Samples, until stopped, how many rows of the account are copies not merged away yet
 * (count() - uniqExact(event_id)); resolves the highest number seen. Merges run in the
 * background, so the end state alone rarely shows that redelivered rows were inserted at all.
 */
export function watchUnmergedCopies(ch: ClickHouse, accountId: string, intervalMs = 1_000): { stop(): Promise<number> } {
  let peak = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const [row] = await ch.query<{ n: string }>(sql`SELECT count() - uniqExact(event_id) AS n FROM events WHERE account_id = ${accountId}`).catch(() => []);
      peak = Math.max(peak, Number(row?.n ?? 0));
      await new Promise((r) => setTimeout(r, intervalMs));
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return peak;
    },
  };
}

/** Messages ever written to a topic (sum of end minus start offsets; nothing expires in a test). */
export async function topicMessages(kafka: KafkaClient, topic: string): Promise<number> {
  const reader = createEndOffsetsReader(kafka);
  await reader.connect();
  try {
    return (await reader.endOffsets([topic])).reduce((sum, p) => sum + Number(p.high - p.low), 0);
  } finally {
    await reader.disconnect();
  }
}

/** Every message written so far has passed jobs -> dedupe -> storage (committed offsets at the end). */
export async function waitForDrained(kafka: TestKafka, setup: ProcessorSetup, timeoutMs: number): Promise<void> {
  const stages = [
    { groupId: setup.groups.jobs, topic: kafka.topic('jobChunks') },
    { groupId: setup.groups.dedupe, topic: kafka.topic('eventsRaw') },
    { groupId: setup.groups.storage, topic: kafka.topic('eventsUnique') },
  ];
  if (!(await waitForPipeline(kafka.kafka, stages, { timeoutMs, pollMs: 500 }))) {
    throw new Error(`the pipeline did not drain within ${timeoutMs} ms (some group has not committed up to its topic's end)`);
  }
}
