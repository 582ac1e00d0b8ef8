import { AppError, type ClickHouse, createLogger, createMetricsRegistry, METRIC_NAMES } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { createClickHouseWriter } from './clickhouse.writer.js';

/** A ClickHouse whose inserts fail with `errors` in turn, then succeed; it keeps what it was sent. */
function flakyClickHouse(errors: Error[]) {
  const sent: string[][] = [];
  const ch = {
    insertTabSeparated: (_table: string, _columns: readonly string[], lines: readonly string[]) => {
      sent.push([...lines]);
      const err = errors.shift();
      return err ? Promise.reject(err) : Promise.resolve();
    },
  } as unknown as ClickHouse;
  return { ch, sent };
}

const zookeeperDown = () =>
  new AppError(
    'clickhouse_unavailable',
    'clickhouse insert into events failed (code 242): Code: 242, e.displayText() = DB::Exception: Table is in readonly mode',
    {
      retryable: true,
      cause: new Error('Code: 242, e.displayText() = DB::Exception: Table is in readonly mode'),
    },
  );

describe('the ClickHouse writer while inserts fail', () => {
  it('retries the same lines, says since when and why it is failing, and clears it on success', async () => {
    const { ch, sent } = flakyClickHouse([zookeeperDown(), zookeeperDown()]);
    const metrics = createMetricsRegistry('writer-test');
    let clock = 1_000;
    const seen: unknown[] = [];
    const writer = createClickHouseWriter({
      ch,
      table: 'events',
      columns: ['a'],
      logger: createLogger({ service: 'test', level: 'silent' }),
      metrics,
      now: () => clock,
      sleep: async () => {
        seen.push(writer.failing?.());
        seen.push((await metrics.getSingleMetric(METRIC_NAMES.clickhouseInsertFailing)?.get())?.values.filter((v) => v.value === 1).map((v) => v.labels.cause));
        clock += 3_000;
      },
    });
    await writer.write(['x\t1', 'y\t2'], { heartbeat: async () => {}, shouldContinue: () => true });
    // Block deduplication needs the retry to carry the same bytes.
    expect(sent).toEqual([
      ['x\t1', 'y\t2'],
      ['x\t1', 'y\t2'],
      ['x\t1', 'y\t2'],
    ]);
    expect(seen).toEqual([
      { sinceMs: 1_000, cause: 'zookeeper', detail: expect.stringContaining('readonly mode') },
      ['zookeeper'],
      { sinceMs: 1_000, cause: 'zookeeper', detail: expect.stringContaining('readonly mode') },
      ['zookeeper'],
    ]);
    expect(writer.failing?.()).toBeUndefined();
    const after = await metrics.getSingleMetric(METRIC_NAMES.clickhouseInsertFailing)?.get();
    expect(after?.values.every((v) => v.value === 0)).toBe(true);
  });
});
