/**
 * Phase 4: the ClickHouse writer alone, compared with baseline B. N records shaped like the
 * gateway's are produced straight to events.unique (under their own account), then one processor
 * runs only its storage stage (PROCESSOR_STAGES=storage) with a fresh consumer group, and the
 * bench times it until ClickHouse has all N rows. Afterwards the pipeline's storage group is
 * moved past these records so the end-to-end phases do not insert them again.
 */
import { type ClickHouse, createProducer, type KafkaClient, type OutgoingMessage, skipGroupToEnd, topicName } from '@ingest/platform';
import { uniqueEventKey } from '@ingest/domain';
import { freePort } from '@ingest/testkit';
import type { Cleanup } from './cleanup.js';
import { type BenchNames, countRows } from './environment.js';
import { sampleRecord } from './events.js';
import { cpuSeconds } from './proc-stats.js';
import { sleep } from './processes.js';
import { scrapeOrEmpty, sumBy } from './prom.js';
import { n0, say } from './say.js';
import { startService } from './services.js';

export const WRITER_ACCOUNT_ID = 'acc_bench_writer';

export interface WriterResult {
  rows: number;
  /** Seconds from spawning the processor until ClickHouse had every row (includes its start-up and group join). */
  fromStartS: number;
  /** Seconds from the first rows seen in ClickHouse until the last (the poll runs every 100 ms). */
  fromFirstRowS: number;
  /** Rows already there when the first were seen (their insert time is not in fromFirstRowS). */
  rowsAtFirstSeen: number;
  /** Rows after the first seen, per second from then on: the writer's steady speed. */
  rowsPerSecFromFirstRow: number;
  /** Seconds the processor took to answer /readyz. */
  startupS: number;
  rowsPerSecFromStart: number;
  inserts: number;
  insertsPerSec: number;
  avgRowsPerInsert: number;
  /** Rows per second of time spent inside inserts. */
  rowsPerInsertSecond?: number;
  produceS: number;
  /** CPU of the writer's processor from its start until every row was in ClickHouse. */
  processorCpuS?: number;
}

export interface WriterContext {
  kafka: KafkaClient;
  ch: ClickHouse;
  names: BenchNames;
  rows: number;
  eventBytes: number;
  source: 'dist' | 'tsx';
  root: string;
  env: Record<string, string | undefined>;
  logDir: string;
  cleanup: Cleanup;
  onSpawn: (pid: number) => void;
  timeoutS: number;
  signal: AbortSignal;
  /** Extra node flags for its processor (--profile: --cpu-prof). */
  nodeArgs?: string[];
}

const PRODUCE_BATCH = 5_000;

export async function runWriterPhase(ctx: WriterContext): Promise<WriterResult> {
  const topic = topicName(ctx.names.topicPrefix, 'eventsUnique');
  const produceS = await produceRecords(ctx, topic);
  const opsPort = await freePort();
  const groupId = `${ctx.names.groupPrefix}writer`;
  say('writer', `starting a processor with PROCESSOR_STAGES=storage, group ${groupId}`);
  const spawnedAt = Date.now();
  let firstRowAt: number | undefined;
  let rowsAtFirstSeen = 0;
  let doneAt: number | undefined;
  const pollStop = new AbortController();
  const pollSignal = AbortSignal.any([ctx.signal, pollStop.signal]);
  const poll = (async () => {
    let lastSay = Date.now();
    while (!pollSignal.aborted && Date.now() - spawnedAt < ctx.timeoutS * 1000) {
      const rows = await countRows(ctx.ch, WRITER_ACCOUNT_ID).catch(() => 0);
      const now = Date.now();
      if (rows > 0 && firstRowAt === undefined) {
        firstRowAt = now;
        rowsAtFirstSeen = rows;
      }
      if (rows >= ctx.rows) {
        doneAt = now;
        return;
      }
      if (now - lastSay > 3_000) {
        lastSay = now;
        say('writer', `${n0(rows)} / ${n0(ctx.rows)} rows in ClickHouse`);
      }
      await sleep(100, pollSignal);
    }
  })();
  const service = await startService({
    name: 'processor',
    source: ctx.source,
    root: ctx.root,
    env: { ...ctx.env, PROCESSOR_STAGES: 'storage', PROCESSOR_STORAGE_GROUP: groupId, PROCESSOR_OPS_PORT: String(opsPort) },
    opsPort,
    logDir: ctx.logDir,
    logName: 'processor-writer',
    nodeArgs: ctx.nodeArgs,
    cleanup: ctx.cleanup,
    onSpawn: ctx.onSpawn,
  }).catch(async (err: unknown) => {
    pollStop.abort();
    await poll;
    throw err;
  });
  const startupS = (Date.now() - spawnedAt) / 1000;
  try {
    await poll;
    ctx.signal.throwIfAborted();
    if (doneAt === undefined || firstRowAt === undefined)
      throw new Error(`ClickHouse did not have all ${n0(ctx.rows)} rows within ${ctx.timeoutS} s; see ${service.child.logFile}`);
    const processorCpuS = cpuSeconds(service.child.pid);
    const metrics = await scrapeOrEmpty(`${service.opsUrl}/metrics`);
    const inserts = sumBy(metrics, 'ingest_clickhouse_insert_duration_seconds_count', 'table').events ?? 0;
    const insertSeconds = sumBy(metrics, 'ingest_clickhouse_insert_duration_seconds_sum', 'table').events ?? 0;
    const fromStartS = (doneAt - spawnedAt) / 1000;
    const fromFirstRowS = Math.max(0.001, (doneAt - firstRowAt) / 1000);
    return {
      rows: ctx.rows,
      fromStartS,
      fromFirstRowS,
      rowsAtFirstSeen,
      startupS,
      rowsPerSecFromStart: ctx.rows / fromStartS,
      rowsPerSecFromFirstRow: (ctx.rows - rowsAtFirstSeen) / fromFirstRowS,
      inserts,
      insertsPerSec: inserts / fromStartS,
      avgRowsPerInsert: inserts > 0 ? ctx.rows / inserts : 0,
      rowsPerInsertSecond: insertSeconds > 0 ? ctx.rows / insertSeconds : undefined,
      produceS,
      processorCpuS,
    };
  } finally {
    await service.child.stop();
  }
}

async function produceRecords(ctx: WriterContext, topic: string): Promise<number> {
  const producer = createProducer(ctx.kafka, { sendTimeoutMs: 60_000 });
  await producer.connect();
  const started = Date.now();
  try {
    const now = Date.now();
    for (let sent = 0; sent < ctx.rows; sent += PRODUCE_BATCH) {
      ctx.signal.throwIfAborted();
      const messages: OutgoingMessage[] = [];
      for (let i = sent; i < Math.min(ctx.rows, sent + PRODUCE_BATCH); i++) {
        const record = sampleRecord(WRITER_ACCOUNT_ID, `${ctx.names.runId}-w`, i, ctx.eventBytes, now);
        messages.push({ key: uniqueEventKey(record), value: JSON.stringify(record) });
      }
      await producer.send(topic, messages);
    }
  } finally {
    await producer.disconnect();
  }
  const seconds = (Date.now() - started) / 1000;
  say('writer', `${n0(ctx.rows)} records produced to ${topic} in ${seconds.toFixed(1)}s (acks=all)`);
  return seconds;
}

/** Moves a consumer group (not yet joined) to the end of a topic: it skips what is there now. */
export function skipToEnd(kafka: KafkaClient, groupId: string, topic: string): Promise<void> {
  return skipGroupToEnd(kafka, groupId, topic);
}
