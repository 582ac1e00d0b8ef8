/**
 * One run of the crm-sink for a chaos test: its own topics (fresh prefix), control plane with an
 * account, a HubSpot credential pointing at its own fake CRM and a mapping, its own Redis key
 * prefix and consumer group, and the sink as OS processes (SinkFleet). Two runs of the same
 * events (one killed, one clean) can then be compared record by record.
 */
import type { CrmMapping, EventRecord } from '@ingest/schemas';
import { committedOffsets, deleteConsumerGroups, type Redis, type TopicKey } from '@ingest/platform';
import { type EventSyncState, ledgerKey, recordStateKeys, syncStateKey, uniqueEventKey } from '@ingest/domain';
import { CONTROL_PLANE_TOPICS, createTestKafka, startControlPlaneClients, type TestKafka, uniqueSuffix, waitFor } from '@ingest/testkit';
import { type FakeCall, type FakeCrm, type FakeRecord, startFakeCrm } from '@ingest/testkit/fake-crm';
import { SinkFleet } from '@ingest/testkit';

/** An event as produced: its partition and offset are known because each run writes a fresh topic in order. */
export interface Produced {
  record: EventRecord;
  partition: number;
  offset: number;
}

export interface SinkRun {
  label: string;
  kafka: TestKafka;
  redis: Redis;
  redisKeyPrefix: string;
  groupId: string;
  accountId: string;
  crm: FakeCrm;
  fleet: SinkFleet;
  produced: Produced[];
  /** Writes the events (in order, explicit partitions) and remembers their offsets. */
  produce(events: { record: Omit<EventRecord, 'accountId'>; partition: number }[]): Promise<void>;
  /** Committed offsets of the group on events.unique, per partition (-1: none). */
  committed(): Promise<Map<number, number>>;
  /** Events produced so far whose offset is at or above their partition's commit. */
  uncommitted(): Promise<Produced[]>;
  /** How many of these ledger keys have their Redis ledger (or activity) mark, under the keys the sink writes. */
  countKeys(keys: string[], kind: 'ledger' | 'activity'): Promise<number>;
  ledgerKeyOf(eventId: string, ruleId: string): string;
  syncStates(): Promise<EventSyncState[]>;
  /** Every event finished (not pending) and every offset committed. */
  drained(timeoutMs: number): Promise<void>;
  cleanup(): Promise<void>;
}

// Every control-plane topic (the sink's control plane reads them all at start), whatever is added later.
// `erasures` too: crm-sink reads the erasure suppression list before it syncs (docs/erasure.md).
const TOPICS: TopicKey[] = ['eventsUnique', 'crmReplay', 'crmDeadLetters', 'erasures', ...CONTROL_PLANE_TOPICS];

export async function createSinkRun(
  label: string,
  mapping: CrmMapping,
  options: { env: Record<string, string>; onCall?: (call: FakeCall, phase: 'received' | 'answered') => void },
): Promise<SinkRun> {
  const token = `tok-${label}-${uniqueSuffix()}`;
  const crm = await startFakeCrm({ tokens: [token], onCall: options.onCall });
  const kafka = await createTestKafka(TOPICS);
  const clients = await startControlPlaneClients(kafka);
  const { redis, producer, controlPlane } = clients;
  const account = await controlPlane.createAccount({ name: `Chaos ${label}`, plan: 'growth' });
  // Through the control plane, as the admin API stores them: the sink processes read them at start.
  await controlPlane.putCrmCredential(account.id, mapping.crm.credentialsRef, { type: 'hubspot', accessToken: token, baseUrl: crm.url });
  await controlPlane.putMapping(account.id, mapping, 'admin');

  const redisKeyPrefix = `t${uniqueSuffix()}:`;
  const groupId = `crm-sink-chaos-${uniqueSuffix()}`;
  const fleet = new SinkFleet({ topicPrefix: kafka.prefix, redisKeyPrefix, groupId, label, env: options.env });
  const produced: Produced[] = [];
  const nextOffset = new Map<number, number>();
  const topic = kafka.topic('eventsUnique');

  const run: SinkRun = {
    label,
    kafka,
    redis,
    redisKeyPrefix,
    groupId,
    accountId: account.id,
    crm,
    fleet,
    produced,
    async produce(events) {
      const records = events.map((e) => ({ record: { ...e.record, accountId: account.id } as EventRecord, partition: e.partition }));
      // One awaited send at a time with an idempotent producer: offsets follow the order sent.
      await producer.send(
        topic,
        records.map(({ record, partition }) => ({
          key: uniqueEventKey(record),
          value: JSON.stringify(record),
          partition,
        })),
      );
      for (const { record, partition } of records) {
        const offset = nextOffset.get(partition) ?? 0;
        nextOffset.set(partition, offset + 1);
        produced.push({ record, partition, offset });
      }
    },
    async committed() {
      const offsets = await committedOffsets(kafka.kafka, groupId, topic);
      return new Map([...offsets].map(([p, o]) => [p, Number(o)]));
    },
    async uncommitted() {
      const committed = await run.committed();
      return produced.filter((e) => e.offset >= Math.max(0, committed.get(e.partition) ?? -1));
    },
    async countKeys(keys, kind) {
      const redisKey = recordStateKeys(redisKeyPrefix)[kind];
      let n = 0;
      for (let i = 0; i < keys.length; i += 500) {
        const values = await redis.mget(...keys.slice(i, i + 500).map(redisKey));
        n += values.filter((v) => v !== null).length;
      }
      return n;
    },
    ledgerKeyOf: (eventId, ruleId) => ledgerKey(account.id, eventId, ruleId),
    async syncStates() {
      const states: EventSyncState[] = [];
      for (let i = 0; i < produced.length; i += 500) {
        const values = await redis.mget(...produced.slice(i, i + 500).map((e) => syncStateKey(redisKeyPrefix, account.id, e.record.eventId)));
        states.push(...values.map((v): EventSyncState => (v === null ? { state: 'pending' } : (JSON.parse(v) as EventSyncState))));
      }
      return states;
    },
    async drained(timeoutMs) {
      await waitFor(
        async () => {
          const pending = (await run.syncStates()).filter((s) => s.state === 'pending').length;
          if (pending > 0) return false;
          return (await run.uncommitted()).length === 0;
        },
        { description: `${label}: every event synced and committed`, timeoutMs, intervalMs: 500 },
      );
    },
    async cleanup() {
      await fleet.killAll();
      const keys = await redis.keys(`${redisKeyPrefix}*`);
      for (let i = 0; i < keys.length; i += 1000) await redis.del(...keys.slice(i, i + 1000));
      await deleteConsumerGroups(kafka.kafka, (g) => g === groupId).catch(() => undefined);
      // As before the clients were shared: a failed close of the control plane does not keep the topics and the fake CRM alive.
      await clients.close().catch(() => undefined);
      await kafka.cleanup();
      await crm.stop();
    },
  };
  return run;
}

/**
 * The fake CRM's HubSpot records of a run in a form two runs can be compared in: contacts and
 * companies by key with every property; notes by activity key (account id replaced, since each
 * run has its own account) with their properties and the records they are associated with.
 */
export function crmSnapshot(run: SinkRun): {
  contacts: Record<string, Record<string, unknown>>;
  companies: Record<string, Record<string, unknown>>;
  notes: Record<string, { properties: Record<string, unknown>; associations: string[] }>;
} {
  const contacts = run.crm.records('hubspot', 'contacts');
  const companies = run.crm.records('hubspot', 'companies');
  const byId = new Map<string, string>();
  for (const [key, r] of contacts) byId.set(r.id, `contact:${key}`);
  for (const [key, r] of companies) byId.set(r.id, `company:${key}`);
  const account = encodeURIComponent(run.accountId);
  const normalise = (text: string) => text.split(account).join('<account>');
  const props = (m: ReadonlyMap<string, FakeRecord>) => Object.fromEntries([...m].map(([k, r]) => [k, { ...r.properties }]));
  return {
    contacts: props(contacts),
    companies: props(companies),
    notes: Object.fromEntries(
      [...run.crm.records('hubspot', 'notes')].map(([key, r]) => [
        normalise(key),
        {
          properties: Object.fromEntries(Object.entries(r.properties).map(([k, v]) => [k, typeof v === 'string' ? normalise(v) : v])),
          associations: r.associations.map((id) => byId.get(id) ?? `unknown id ${id}`),
        },
      ]),
    ),
  };
}
