/**
 * Real servers: Kafka, ClickHouse, Redis; the real gateway app in process (fastify inject) and
 * the processor as real OS processes. Guarantee 2 of docs/architecture.md: 100,000 events with unique
 * ids, a quarter of them sent twice (twice in one request, again in a later phase, again
 * through a bulk job), while processors are killed with SIGKILL three times mid-stream and the
 * group scales from one process to two and back. Afterwards ClickHouse holds each event once,
 * counted once by every query docs/clickhouse.md gives data engineers, and metered once.
 *
 * The script, against phase 1's progress: one process; at 8% a second one (scale out); SIGKILL
 * the older; a new one; SIGKILL the older again; a new one; at 55% a bulk job; at 65% SIGTERM
 * the older (scale in); SIGKILL the last one; a new one. Phase 2 then repeats ids minutes later.
 */
import type { JobStatus } from '@ingest/schemas';
import { METRIC_NAMES, sql } from '@ingest/platform';
import { waitFor } from '@ingest/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { useGatewayFixture } from '@ingest/testkit/gateway';
import { type ApiClient, jobStatus, newStats, postBulk, postEvents, runPool, testEvent, toRequests } from '@ingest/testkit/processor';
import { eventCounts, topicMessages, waitForDrained, watchUnmergedCopies } from '@ingest/testkit/processor';
import { metricSum, ProcessorFleet, type ProcessorProcess, processorSetup } from '@ingest/testkit';

const TOTAL = 100_000;
/** Requests of 100 events per second: stretches the stream over ~2 minutes so the chaos lands inside it. */
const REQUESTS_PER_SECOND = 10;
const CONCURRENCY = 8;

/** Which ids are sent twice, and how: every 4th id, the three ways in turn. */
type Repeat = 'none' | 'sameRequest' | 'laterPhase' | 'bulkJob';
function repeatOf(n: number): Repeat {
  if (n % 4 !== 0) return 'none';
  return (['sameRequest', 'laterPhase', 'bulkJob'] as const)[(n / 4) % 3] as Repeat;
}
const event = (n: number) => testEvent(`ev-${n}`, n);
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
const dedupeCount = (metrics: string) => metricSum(metrics, METRIC_NAMES.dedupeUnique) + metricSum(metrics, METRIC_NAMES.dedupeHits);

/**
 * Resolves true once the process passes events through dedupe faster than `perSecond`: it is
 * working through a backlog, batch after batch, so a kill now most likely lands mid-batch.
 * False after `patienceMs` (the kill then happens at steady state, which is a case too).
 */
async function whenBusy(p: ProcessorProcess, perSecond: number, patienceMs: number): Promise<boolean> {
  let last = { at: Date.now(), n: dedupeCount(await p.metrics()) };
  return waitFor(
    async () => {
      const now = { at: Date.now(), n: dedupeCount(await p.metrics()) };
      const rate = ((now.n - last.n) * 1000) / Math.max(1, now.at - last.at);
      last = now;
      return rate > perSecond;
    },
    { description: `${p.name} busy`, timeoutMs: patienceMs, intervalMs: 300 },
  ).catch(() => false);
}

let fleet: ProcessorFleet | undefined;
let unmerged: ReturnType<typeof watchUnmergedCopies> | undefined;

const gw = useGatewayFixture();

afterEach(async () => {
  await unmerged?.stop();
  await fleet?.killAll();
});

describe('exactly once under SIGKILL and rebalancing', () => {
  it('stores, counts and meters 100,000 events once each although a quarter were sent twice', async () => {
    const started = Date.now();
    // The broker's smallest session timeout (group.min.session.timeout.ms): a process started
    // after a SIGKILL is ready once the group gave up on the dead member, 6 s instead of the
    // default 30 s (CI time). A killed member never comes back, so each kill outlasts it.
    const setup = processorSetup(gw.kafka.prefix, gw.clickhouse.database, 'exactly-once', { KAFKA_SESSION_TIMEOUT_MS: '6000' });
    fleet = new ProcessorFleet(setup);
    const processors = fleet;
    const { account, apiKey } = await gw.newAccount('growth');
    const client: ApiClient = { app: gw.app, apiKey };
    const stats = newStats();
    unmerged = watchUnmergedCopies(gw.clickhouse.ch, account.id);
    // Streamed as it happens, so a run that times out still shows how far it got.
    const note = (what: string) => console.log(`exactly-once ${((Date.now() - started) / 1000).toFixed(1)} s: ${what}`);

    // Phase 1: every id once, in id order; the `sameRequest` ids twice in a row, in one request.
    const requests = toRequests(
      range(0, TOTAL).map((n) => (repeatOf(n) === 'sameRequest' ? [event(n), event(n)] : [event(n)])),
      100,
    );
    const bulkIds = range(0, TOTAL).filter((n) => repeatOf(n) === 'bulkJob');
    const laterIds = range(0, TOTAL).filter((n) => repeatOf(n) === 'laterPhase');
    // Ids below this were acknowledged by the time the first bulk job is sent (at 55% of phase 1).
    const firstBulkBelow = 45_000;
    const jobIds: string[] = [];
    let scaledDownExit: number | string | undefined;

    const running: ProcessorProcess[] = [await processors.start()];
    note(`started ${running[0]?.name}`);
    const start = async () => {
      const p = await processors.start();
      running.push(p);
      note(`started ${p.name} (${running.length} running)`);
    };
    /** SIGKILL to the oldest process, preferably while it works through a backlog (mid-batch). */
    const kill = async () => {
      const victim = running.shift();
      if (!victim) throw new Error('no processor left to kill');
      const busy = await whenBusy(victim, 2 * REQUESTS_PER_SECOND * 100, 8_000);
      await processors.kill(victim);
      note(`SIGKILL ${victim.name} (${busy ? 'while catching up on a backlog' : 'at steady state'}; ${running.length} running)`);
    };

    // Progress of phase 1 (requests answered); the chaos script below waits for points of it.
    let done = 0;
    const waiting: { at: number; resolve: () => void }[] = [];
    const onProgress = (n: number) => {
      done = n;
      for (const w of waiting.filter((x) => n >= x.at)) {
        waiting.splice(waiting.indexOf(w), 1);
        w.resolve();
      }
    };
    const reached = (fraction: number) =>
      new Promise<void>((resolve) => (done >= fraction * requests.length ? resolve() : waiting.push({ at: fraction * requests.length, resolve })));
    /** "A short pause": 3% more of the load (about 3 s). */
    const pause = () => reached(Math.min(1, done / requests.length + 0.03));

    // Each start after a SIGKILL is ready only once the group gave up on the dead member
    // (session timeout, 6 s here), so the survivors and the newcomer then catch up on a backlog.
    const chaos = (async () => {
      await reached(0.08);
      await start(); // scale out: two processes
      await kill(); // one of the two
      await pause();
      await start();
      await kill();
      await pause();
      await start();
      await reached(0.55);
      jobIds.push(await postBulk(client, bulkIds.filter((n) => n < firstBulkBelow).map(event)));
      note(`bulk job ${jobIds[0]} queued (its ids were sent before through /v1/events)`);
      await reached(0.65);
      const leaving = running.shift(); // scale in: the older one leaves gracefully
      if (!leaving) throw new Error('no processor to scale in');
      scaledDownExit = await processors.stop(leaving);
      note(`SIGTERM ${leaving.name} (exit ${scaledDownExit}; ${running.length} running)`);
      await kill(); // the last one
      await pause();
      await start();
    })();
    chaos.catch(() => {}); // awaited after the load; this only keeps an early failure from being unhandled

    await runPool(requests, { concurrency: CONCURRENCY, perSecond: REQUESTS_PER_SECOND }, (r) => postEvents(client, r, stats), onProgress);
    note(`phase 1 sent: ${stats.requests} requests, ${stats.events} events`);
    await chaos;

    // Phase 2, minutes after the first copies: the rest of the bulk repeats and the late repeats.
    jobIds.push(await postBulk(client, bulkIds.filter((n) => n >= firstBulkBelow).map(event)));
    note(`bulk job ${jobIds[1]} queued`);
    await runPool(
      toRequests(
        laterIds.map((n) => [event(n)]),
        100,
      ),
      { concurrency: CONCURRENCY, perSecond: REQUESTS_PER_SECOND },
      (r) => postEvents(client, r, stats),
    );
    note(`phase 2 sent: ${laterIds.length} events again through /v1/events`);
    expect(stats.events).toBe(TOTAL + TOTAL / 4 - bulkIds.length);

    const jobs = await waitFor(
      async () => {
        const all = await Promise.all(jobIds.map((id) => jobStatus(client, id)));
        return all.every((s) => s.status === 'completed' || s.status === 'failed') ? all : undefined;
      },
      { description: 'both bulk jobs finished', timeoutMs: 180_000, intervalMs: 500 },
    );
    const jobCounts = ({ status, processed, accepted, rejected, duplicates }: JobStatus) => ({ status, processed, accepted, rejected, duplicates });
    // A job cannot know that its ids came through /v1/events before: it accepts them, dedupe drops them.
    const bulkSizes = [bulkIds.filter((n) => n < firstBulkBelow).length, bulkIds.filter((n) => n >= firstBulkBelow).length];
    expect(jobs.map(jobCounts)).toEqual(bulkSizes.map((size) => ({ status: 'completed', processed: size, accepted: size, rejected: 0, duplicates: 0 })));
    note('bulk jobs completed');

    const stored = await waitFor(
      async () => {
        const c = await eventCounts(gw.clickhouse.ch, account.id);
        return c.distinct === TOTAL ? c : undefined;
      },
      { description: `${TOTAL} distinct events in ClickHouse`, timeoutMs: 300_000, intervalMs: 1_000 },
    );
    note(`${TOTAL} distinct events in ClickHouse (${stored.rawRows} rows before merges)`);
    await waitForDrained(gw.kafka, setup, 180_000);
    note('pipeline drained');
    const peakUnmerged = await unmerged.stop();

    const final = await eventCounts(gw.clickhouse.ch, account.id);
    expect(final).toMatchObject({ distinct: TOTAL, final: TOTAL, view: TOTAL, metered: TOTAL });
    const [foreign] = await gw.clickhouse.ch.query<{ n: string }>(
      sql`SELECT count() AS n FROM events FINAL WHERE account_id = ${account.id} AND NOT (event_id LIKE 'ev-%' AND toUInt32OrZero(substring(event_id, 4)) < ${TOTAL})`,
    );
    expect(Number(foreign?.n)).toBe(0);
    expect(await topicMessages(gw.kafka.kafka, gw.kafka.topic('deadLetters'))).toBe(0);
    expect(scaledDownExit).toBe(0);
    expect(processors.unexpectedExits()).toEqual([]);

    const [rawMessages, uniqueMessages] = await Promise.all([
      topicMessages(gw.kafka.kafka, gw.kafka.topic('eventsRaw')),
      topicMessages(gw.kafka.kafka, gw.kafka.topic('eventsUnique')),
    ]);
    const dedupeHits = await processors.counterTotal(METRIC_NAMES.dedupeHits);
    console.log(
      [
        'exactly-once summary:',
        `sent: ${stats.events} events in ${stats.requests} requests (${stats.retried} retried 503s) + ${bulkIds.length} through 2 bulk jobs`,
        `Kafka: events.raw ${rawMessages} messages, events.unique ${uniqueMessages} (${uniqueMessages - TOTAL} copies passed dedupe); dedupe hits counted by the processes: ≥ ${dedupeHits} (raw minus unique is ${rawMessages - uniqueMessages}; hits above that are batches re-read after a kill)`,
        `ClickHouse: up to ${peakUnmerged} copies seen unmerged (count() without FINAL minus distinct, sampled every second); ` +
          `${stored.rawRows} rows when the last event arrived, ${final.rawRows} at the end; uniqExact ${final.distinct}, FINAL ${final.final}, events_dedup ${final.view}, metered ${final.metered}`,
        `took ${Math.round((Date.now() - started) / 1000)} s`,
      ].join('\n'),
    );
  });
});
