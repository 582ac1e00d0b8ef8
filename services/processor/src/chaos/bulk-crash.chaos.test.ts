/**
 * Real servers: Kafka, ClickHouse, Redis; the real gateway app in process (fastify inject) and
 * the processor as a real OS process. A bulk job of 10,000 events (some invalid, some repeated)
 * loses its processor to SIGKILL halfway through; the restarted processor runs the job again
 * from its first chunk. The job ends with exactly the counts of a clean run, and ClickHouse
 * holds exactly the accepted events, once each.
 */
import type { JobStatus } from '@ingest/schemas';
import { raw, sql } from '@ingest/platform';
import { waitFor } from '@ingest/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { useGatewayFixture } from '@ingest/testkit/gateway';
import { type ApiClient, jobStatus, postBulk, testEvent } from '@ingest/testkit/processor';
import { eventCounts, topicMessages, waitForDrained } from '@ingest/testkit/processor';
import { ProcessorFleet, processorSetup } from '@ingest/testkit';

const TOTAL = 10_000;

let fleet: ProcessorFleet | undefined;

const gw = useGatewayFixture();

afterEach(async () => {
  await fleet?.killAll();
});

/** Every 13th event has a broken email; the last 400 repeat the ids of events 1,000..1,399. */
function jobEvents(): object[] {
  return Array.from({ length: TOTAL }, (_, i) => {
    const n = i >= TOTAL - 400 ? i - (TOTAL - 400) + 1_000 : i;
    const event = testEvent(`bulk-${n}`, i);
    return i % 13 === 7 ? { ...event, email: 'not-an-email' } : event;
  });
}

/** What a clean run must report: the job runner's rule, computed independently. */
function expectedOutcome(events: object[]): { accepted: string[]; rejected: number; duplicates: number; firstRejected: number[] } {
  const accepted = new Set<string>();
  let rejected = 0;
  let duplicates = 0;
  const firstRejected: number[] = [];
  events.forEach((e, index) => {
    const { email, eventId } = e as { email: string; eventId: string };
    if (!email.includes('@')) {
      rejected++;
      if (firstRejected.length < 100) firstRejected.push(index);
    } else if (accepted.has(eventId)) {
      duplicates++;
    } else {
      accepted.add(eventId);
    }
  });
  return { accepted: [...accepted].sort(), rejected, duplicates, firstRejected };
}

describe('a bulk job whose processor is killed with SIGKILL halfway', () => {
  it('completes after a restart with the counts of a clean run, its accepted events stored once', async () => {
    const started = Date.now();
    // The broker's smallest session timeout (group.min.session.timeout.ms): the restarted
    // processor is ready once the group gave up on the killed one, 6 s instead of the default
    // 30 s (CI time). The killed member never comes back, so the kill still outlasts it.
    const setup = processorSetup(gw.kafka.prefix, gw.clickhouse.database, 'bulk', { KAFKA_SESSION_TIMEOUT_MS: '6000' });
    fleet = new ProcessorFleet(setup);
    const { account, apiKey } = await gw.newAccount('growth');
    const client: ApiClient = { app: gw.app, apiKey };
    const events = jobEvents();
    const expected = expectedOutcome(events);
    // The computation is not trivial: all three outcomes occur.
    expect(expected.rejected).toBeGreaterThan(0);
    expect(expected.duplicates).toBeGreaterThan(0);

    const first = await fleet.start();
    const jobId = await postBulk(client, events);
    const halfway = await waitFor(
      async () => {
        const s = await jobStatus(client, jobId);
        if (s.status === 'completed' || s.status === 'failed') throw new Error(`the job finished (${s.status}) before the kill: nothing was interrupted`);
        return s.processed >= TOTAL / 2 && s.processed < TOTAL ? s : undefined;
      },
      { description: 'the job halfway through', timeoutMs: 120_000, intervalMs: 5 },
    );
    await fleet.kill(first, { scrapeFirst: false });
    const atKill = await jobStatus(client, jobId);
    console.log(`bulk-crash: killed ${first.name} with the job at processed=${halfway.processed} (${atKill.processed} stored as of the kill) of ${TOTAL}`);
    expect(atKill.status).toBe('processing');
    expect(atKill.processed).toBeLessThan(TOTAL);

    await fleet.start();
    const done = await waitFor(
      async () => {
        const s = await jobStatus(client, jobId);
        return s.status === 'completed' || s.status === 'failed' ? s : undefined;
      },
      { description: 'the job finished after the restart', timeoutMs: 180_000, intervalMs: 250 },
    );
    const counts = ({ status, totalEvents, processed, accepted, rejected, duplicates }: JobStatus) => ({
      status,
      totalEvents,
      processed,
      accepted,
      rejected,
      duplicates,
    });
    expect(counts(done)).toEqual({
      status: 'completed',
      totalEvents: TOTAL,
      processed: TOTAL,
      accepted: expected.accepted.length,
      rejected: expected.rejected,
      duplicates: expected.duplicates,
    });
    // The first 100 errors are those of a clean run too: the re-run started again from chunk 0.
    expect(done.errors.map((e) => e.index)).toEqual(expected.firstRejected);
    expect(new Set(done.errors.map((e) => e.code))).toEqual(new Set(['invalid_format']));

    await waitForDrained(gw.kafka, setup, 180_000);
    const ofJob = raw(sql`AND job_id = ${jobId}`);
    const stored = await waitFor(
      async () => {
        const c = await eventCounts(gw.clickhouse.ch, account.id, ofJob);
        return c.distinct === expected.accepted.length ? c : undefined;
      },
      { description: `${expected.accepted.length} distinct events of the job in ClickHouse`, timeoutMs: 120_000, intervalMs: 500 },
    );
    const ids = await gw.clickhouse.ch.query<{ event_id: string }>(sql`SELECT event_id FROM events FINAL WHERE account_id = ${account.id} ORDER BY event_id`);
    expect(ids.map((r) => r.event_id)).toEqual(expected.accepted);
    expect(stored).toMatchObject({
      distinct: expected.accepted.length,
      final: expected.accepted.length,
      view: expected.accepted.length,
      metered: expected.accepted.length,
    });
    expect(fleet.unexpectedExits()).toEqual([]);
    const [rawMessages, uniqueMessages] = await Promise.all([
      topicMessages(gw.kafka.kafka, gw.kafka.topic('eventsRaw')),
      topicMessages(gw.kafka.kafka, gw.kafka.topic('eventsUnique')),
    ]);
    console.log(
      `bulk-crash: ${TOTAL} events -> accepted ${done.accepted}, rejected ${done.rejected}, duplicates ${done.duplicates}; ` +
        `events.raw ${rawMessages} messages (the re-run wrote its first chunks again), events.unique ${uniqueMessages} (dedupe dropped ${rawMessages - uniqueMessages}); ` +
        `ClickHouse rows before merges ${stored.rawRows}, FINAL ${stored.final}; ${Math.round((Date.now() - started) / 1000)} s`,
    );
  });
});
