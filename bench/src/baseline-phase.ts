/** The baseline phase of the bench: the raw figures the pipeline is compared with. */
import type { ClickHouse } from '@ingest/platform';
import { clickhouseInsertBaseline, kafkaProducerBaseline, noopFastifyBaseline } from './baselines.js';
import type { Cleanup } from './cleanup.js';
import type { BenchNames } from './environment.js';
import type { BodyFactory } from './events.js';
import type { RunStateFile } from './leftovers.js';
import type { BenchOptions } from './options.js';
import type { BenchResult } from './report.js';
import { n0, say } from './say.js';

export interface BaselineContext {
  options: BenchOptions;
  names: BenchNames;
  root: string;
  stackDir: string;
  logDir: string;
  bodies: BodyFactory;
  cleanup: Cleanup;
  signal: AbortSignal;
  ch: ClickHouse;
  pids: Record<string, number | undefined>;
  state: RunStateFile;
  /** Filled in: `baselines` and, for a baseline that failed, `errors`. */
  result: BenchResult;
}

/** Baselines A, B and C, each skipped when its size is 0; one that fails is reported and the run goes on. */
export async function runBaselines(ctx: BaselineContext): Promise<void> {
  const { options, names, root, stackDir, logDir, bodies, cleanup, ch, pids, state, result } = ctx;
  const onSpawn = (pid: number) => state.addChild(pid);
  const attempt = async (what: string, work: () => Promise<void>) => {
    if (ctx.signal.aborted) return;
    try {
      await work();
    } catch (err) {
      if (ctx.signal.aborted) return;
      result.errors.push(`${what}: ${(err as Error).message}`);
      say(what, `failed: ${(err as Error).message}`);
    }
  };
  if (options.BENCH_KAFKA_RECORDS > 0) {
    await attempt('kafka', async () => {
      say('kafka', `baseline A: ProducerPerformance, ${n0(options.BENCH_KAFKA_RECORDS)} records of 300 B, acks=all`);
      result.baselines.kafka = await kafkaProducerBaseline({
        stackDir,
        brokers: options.KAFKA_BROKERS,
        topic: names.baselineTopic,
        records: options.BENCH_KAFKA_RECORDS,
        recordSize: 300,
        logDir,
        brokerPid: pids.kafka,
        cwd: root,
        cleanup,
        onSpawn,
      });
      say('kafka', `${n0(result.baselines.kafka.recordsPerSec)} records/s`);
    });
  }
  if (options.BENCH_CLICKHOUSE_ROWS > 0) {
    await attempt('clickhouse', async () => {
      say('clickhouse', `baseline B: ${n0(options.BENCH_CLICKHOUSE_ROWS)} rows in inserts of ${n0(options.BENCH_CLICKHOUSE_BATCH)}`);
      result.baselines.clickhouse = await clickhouseInsertBaseline({
        ch,
        rows: options.BENCH_CLICKHOUSE_ROWS,
        batchRows: options.BENCH_CLICKHOUSE_BATCH,
        accountId: 'acc_bench_baseline',
        runId: names.runId,
        eventBytes: options.BENCH_EVENT_BYTES,
        clickhousePid: pids.clickhouse,
        signal: ctx.signal,
      });
      say('clickhouse', `${n0(result.baselines.clickhouse.rowsPerSec)} rows/s`);
    });
  }
  if (options.BENCH_NOOP_DURATION_S > 0) {
    await attempt('noop', async () => {
      say('noop', `baseline C: no-op fastify route for ${options.BENCH_NOOP_DURATION_S}s`);
      result.baselines.noop = await noopFastifyBaseline({
        cwd: root,
        logDir,
        durationS: options.BENCH_NOOP_DURATION_S,
        concurrency: options.BENCH_CONCURRENCY,
        eventsPerRequest: options.BENCH_EVENTS_PER_REQUEST,
        bodies,
        localAddress: names.localAddress,
        cleanup,
        onSpawn,
      });
      say('noop', `${n0(result.baselines.noop.requestsPerSec)} req/s = ${n0(result.baselines.noop.eventsPerSec)} events/s`);
    });
  }
}
