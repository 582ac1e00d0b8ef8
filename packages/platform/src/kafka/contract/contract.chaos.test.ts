/**
 * Real server: Kafka, paused (SIGSTOP/SIGCONT) and restarted by this test (chaos project: runs
 * alone). The wrapper's contract under broker failures, for every driver:
 * - a broker stalled longer than the session timeout, under load: every member rejoins by
 *   itself (no one calls restart, no process restarts) and everything accepted is consumed;
 * - a broker restarted mid-produce: at-least-once, nothing acknowledged is lost.
 */
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import {
  createTestKafka,
  integrationEnv,
  pauseKafka,
  resumeKafka,
  startKafka,
  stopKafka,
  type TestKafka,
  testLogger,
  uniqueSuffix,
  waitFor,
} from '@ingest/testkit';
import { createProducer, type Producer } from '../producer.js';
import { CONTRACT_DRIVERS, readAll, type Recorder, recordingConsumer, startLoad } from './contract-kit.js';

const logger = testLogger();
/** The broker's smallest allowed session timeout (group.min.session.timeout.ms), so the stall outlasts it quickly. */
const SESSION_TIMEOUT_MS = 6_000;
/** How long the broker stays stopped: twice the session timeout, so every member is evicted on resume. */
const STALL_MS = 4 * SESSION_TIMEOUT_MS;
/** Bound on everything accepted being consumed after the broker is back. */
const RECOVERY_BOUND_MS = 90_000;

afterAll(async () => {
  // Whatever happened, leave the broker running.
  await resumeKafka();
  await startKafka();
});

describe.each(CONTRACT_DRIVERS)('Kafka wrapper contract under broker failures (%s)', (driver) => {
  let kafka: TestKafka | undefined;
  let producer: Producer | undefined;
  const consumers: Recorder[] = [];

  afterEach(async () => {
    await resumeKafka();
    for (const c of consumers.splice(0)) await c.consumer.stop().catch(() => {});
    await producer?.disconnect().catch(() => {});
    await kafka?.cleanup().catch(() => {});
  });

  async function setup(members: number): Promise<{ topic: string; producer: Producer; joins: number[] }> {
    kafka = await createTestKafka(['eventsUnique'], integrationEnv(), driver);
    producer = createProducer(kafka.kafka);
    await producer.connect();
    const topic = kafka.topic('eventsUnique');
    const groupId = `contract-chaos-${uniqueSuffix()}`;
    const joins = Array.from({ length: members }, () => 0);
    for (let i = 0; i < members; i++) {
      const r = recordingConsumer(kafka.kafka, {
        groupId,
        topics: [topic],
        logger,
        sessionTimeoutMs: SESSION_TIMEOUT_MS,
        partitionsConsumedConcurrently: 3,
        onGroupJoin: () => {
          joins[i] = (joins[i] ?? 0) + 1;
        },
        recovery: { initialBackoffMs: 250, maxBackoffMs: 2_000 },
      });
      consumers.push(r);
      await r.consumer.start();
    }
    return { topic, producer, joins };
  }

  /** Waits until the members together consumed every accepted value, and prints what is missing if not. */
  async function everyAcceptedConsumed(accepted: Set<string>, what: string): Promise<void> {
    await waitFor(
      () => {
        const consumed = new Set(consumers.flatMap((c) => c.values()));
        const missing = [...accepted].filter((v) => !consumed.has(v));
        if (missing.length > 0) throw new Error(`${missing.length} of ${accepted.size} accepted not consumed, e.g. ${missing.slice(0, 3).join(', ')}`);
        return true;
      },
      { description: what, timeoutMs: RECOVERY_BOUND_MS, intervalMs: 500 },
    );
  }

  it('rejoins by itself after the broker stalled longer than the session timeout under load, and consumes everything accepted', async () => {
    const { topic, producer: p, joins } = await setup(2);
    const load = startLoad(p, topic, 'stall');
    await waitFor(() => consumers.every((c) => c.seen.length > 0) && load.accepted.size >= 200, { description: 'load flowing to both members' });
    const joinsBefore = [...joins];

    // The scenario itself, not a wait for a condition: the broker is frozen this long.
    pauseKafka();
    await new Promise((resolve) => setTimeout(resolve, STALL_MS));
    const acceptedDuringStall = load.accepted.size;
    await resumeKafka();
    const beforeResume = new Set(load.accepted);

    await everyAcceptedConsumed(load.accepted, 'everything accepted (also after the stall) consumed');

    // Every member runs again, holds partitions and consumes messages sent after the stall, having
    // joined again by itself. The load keeps going meanwhile: a member that rejoins late gets its
    // partitions only then, and needs new messages to show it consumes. One that was dropped
    // from the group and never came back would leave every partition to the other. (Whether the
    // broker dropped them on waking is a race with the heartbeats queued during the stall; when
    // it did, each member joined again by itself: the join counts below say which happened.)
    await waitFor(
      () => {
        const state = consumers.map((c, i) => ({
          healthy: c.consumer.healthy(),
          alive: c.consumer.alive(),
          partitions: c.consumer.assignments()[topic] ?? [],
          joins: joins[i],
          consumedSinceResume: c.values().filter((v) => !beforeResume.has(v)).length,
        }));
        const ok =
          state.every((m) => m.healthy && m.alive && m.partitions.length > 0 && m.consumedSinceResume > 0) && state.flatMap((m) => m.partitions).length === 3;
        if (!ok) throw new Error(`members: ${JSON.stringify(state)}`);
        return true;
      },
      { description: 'both members running with partitions and consuming again', timeoutMs: RECOVERY_BOUND_MS },
    );
    const acceptedAfter = load.accepted.size;
    await waitFor(() => load.accepted.size > acceptedAfter + 100, { description: 'new sends accepted after the members settled' });
    await load.stop();
    await everyAcceptedConsumed(load.accepted, 'everything accepted consumed at the end');
    // Accepted is durable: in the log, not only consumed.
    const inLog = new Set((await readAll(kafka?.kafka ?? never(), topic, logger)).map((m) => m.value?.toString() ?? ''));
    expect([...load.accepted].filter((v) => !inLog.has(v))).toEqual([]);
    console.log(
      `${driver}: ${acceptedDuringStall} accepted before/during the stall, ${load.accepted.size} in all, ${load.rejections} sends rejected and retried; group joins per member ${joinsBefore.join('/')} before, ${joins.join('/')} after`,
    );
  });

  it('loses nothing acknowledged when the broker restarts mid-produce (at-least-once)', async () => {
    const { topic, producer: p } = await setup(1);
    const load = startLoad(p, topic, 'restart');
    await waitFor(() => load.accepted.size >= 200, { description: 'load flowing' });
    await stopKafka();
    await startKafka();
    const acceptedAtRestart = load.accepted.size;
    await waitFor(() => load.accepted.size > acceptedAtRestart + 200, { description: 'sends accepted again after the restart', timeoutMs: RECOVERY_BOUND_MS });
    await load.stop();
    await everyAcceptedConsumed(load.accepted, 'everything accepted consumed after the restart');
    const inLog = new Set((await readAll(kafka?.kafka ?? never(), topic, logger)).map((m) => m.value?.toString() ?? ''));
    expect([...load.accepted].filter((v) => !inLog.has(v))).toEqual([]);
    expect(consumers[0]?.consumer.healthy()).toBe(true);
    console.log(`${driver}: ${load.accepted.size} accepted across the restart, ${load.rejections} sends rejected and retried`);
  });
});

function never(): never {
  throw new Error('no test Kafka');
}
