/**
 * The whole pipeline on the stack's three-node Kafka cluster for the scale tests (docs/scale.md):
 * topics with replication 3 and min.insync.replicas 2 (what `ingest setup` creates with the
 * cluster settings), a fresh ClickHouse database on the shared server, the gateway, a processor
 * and a crm-sink as real OS processes, a fake HubSpot over real HTTP; then steady load from a
 * keep-alive HTTP client (fetch), every answer remembered per event id, and the checks every
 * scale test makes at the end: every 202 stored exactly once and synced, no 503 stored.
 */
import type { CrmMapping } from '@ingest/schemas';
import { type Closeable, type Redis, readTopicToEnd, sql, TOPICS, type TopicKey } from '@ingest/platform';
import { syncStateKey } from '@ingest/domain';
import {
  type ClusterNode,
  createTestClickHouse,
  createTestKafka,
  type GatewayProcess,
  integrationEnv,
  ProcessorFleet,
  processorSetup,
  SinkFleet,
  type ServiceProcess,
  stackKafkaCluster,
  startControlPlaneClients,
  startGatewayProcess,
  type TestClickHouse,
  type TestKafka,
  testLogger,
  uniqueSuffix,
  waitFor,
} from '@ingest/testkit';
import { type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';

/** Consumers notice a dead member (or coordinator) this fast; the services' smallest allowed value. */
const SESSION_TIMEOUT_MS = 6_000;
const CONTACTS = 50;

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot-scale' },
  rules: [{ id: 'page-view', when: { eventName: 'Page Viewed' }, object: 'contact', actions: [{ op: 'increment', field: 'page_views' }] }],
};

export interface ClusterPipeline {
  nodes: ClusterNode[];
  kafka: TestKafka;
  clickhouse: TestClickHouse;
  redis: Redis & Closeable;
  accountId: string;
  apiKey: string;
  gateway: GatewayProcess;
  processor: ServiceProcess;
  sink: ServiceProcess;
  processors: ProcessorFleet;
  sinks: SinkFleet;
  sinkPrefix: string;
  close(): Promise<void>;
}

export async function startClusterPipeline(label: string): Promise<ClusterPipeline> {
  const nodes = stackKafkaCluster();
  const env = integrationEnv();
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const c of closers.splice(0).reverse()) await c().catch(() => {});
  };
  try {
    const kafka = await createTestKafka(Object.keys(TOPICS) as TopicKey[], env, env.kafkaDriver, { replicationFactor: 3, minInsyncReplicas: 2 });
    closers.push(() => kafka.cleanup());
    const clickhouse = await createTestClickHouse(env);
    closers.push(() => clickhouse.cleanup());
    const { redis, controlPlane, close: closeClients } = await startControlPlaneClients(kafka, { redisUrl: env.redisUrl });
    closers.push(closeClients);
    const account = await controlPlane.createAccount({ name: `Scale ${label}`, plan: 'growth' });
    const { plaintext: apiKey } = await controlPlane.createApiKey(account.id, 'load');
    const token = `tok-scale-${uniqueSuffix()}`;
    const crm: FakeCrm = await startFakeCrm({ tokens: [token] });
    closers.push(() => crm.stop());
    await controlPlane.putCrmCredential(account.id, mapping.crm.credentialsRef, { type: 'hubspot', accessToken: token, baseUrl: crm.url });
    await controlPlane.putMapping(account.id, mapping, 'admin');

    // The topics' replication, as the Kubernetes ConfigMap gives every service: /readyz's kafka-brokers check reads it.
    const common = { KAFKA_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS), KAFKA_REPLICATION_FACTOR: '3', KAFKA_MIN_INSYNC_REPLICAS: '2' };
    const sinkPrefix = `t${uniqueSuffix()}:`;
    const processors = new ProcessorFleet({ ...processorSetup(kafka.prefix, clickhouse.database, `scale-${label}`), env: common });
    closers.push(() => processors.killAll());
    const sinks = new SinkFleet({
      topicPrefix: kafka.prefix,
      redisKeyPrefix: sinkPrefix,
      groupId: `crm-sink-scale-${uniqueSuffix()}`,
      label: `scale-sink-${label}`,
      env: common,
    });
    closers.push(() => sinks.killAll());
    const [processor, sink, gateway] = await Promise.all([
      processors.start(),
      sinks.start(),
      startGatewayProcess(`scale-gateway-${label}`, {
        ...common,
        KAFKA_TOPIC_PREFIX: kafka.prefix,
        CLICKHOUSE_DATABASE: clickhouse.database,
        RATE_LIMIT_PER_MINUTE: '100000000',
      }),
    ]);
    closers.push(() => gateway.kill());
    return { nodes, kafka, clickhouse, redis, accountId: account.id, apiKey, gateway, processor, sink, processors, sinks, sinkPrefix, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** One request's fate: when it started and was answered, and how (0: no answer, the connection failed). */
export interface RequestRecord {
  started: number;
  answered: number;
  status: number;
  /** The event ids it carried (to tell, when a check fails, which requests the ids came from). */
  ids: string[];
}

export interface Load {
  /** The last answer per event id. */
  answers: Map<string, number>;
  requests: RequestRecord[];
  /** Events answered `status` so far. */
  count(status: number): number;
  /** Stops starting requests and waits for the open ones. */
  stop(): Promise<void>;
}

/** Requests of `eventsPerRequest` events started at `perSecond`, whatever the answers take (at most `maxOpen` open at once). */
export function startLoad(p: ClusterPipeline, options: { perSecond: number; eventsPerRequest: number; maxOpen?: number }): Load {
  const answers = new Map<string, number>();
  const requests: RequestRecord[] = [];
  const inFlight = new Set<Promise<void>>();
  let sent = 0;
  let loading = true;
  const post = async (ids: string[]) => {
    const started = Date.now();
    let status: number;
    try {
      // fetch keeps its connections alive between requests, as SDKs do.
      const res = await fetch(`${p.gateway.url}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${p.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          events: ids.map((eventId, i) => ({ eventId, eventName: 'Page Viewed', email: `user${i % CONTACTS}@acme.io`, properties: { n: i } })),
        }),
        signal: AbortSignal.timeout(90_000),
      });
      await res.arrayBuffer();
      status = res.status;
    } catch {
      status = 0;
    }
    for (const id of ids) answers.set(id, status);
    requests.push({ started, answered: Date.now(), status, ids });
  };
  const loop = (async () => {
    for (let next = Date.now(); loading; next += 1000 / options.perSecond) {
      await new Promise((r) => setTimeout(r, Math.max(0, next - Date.now())));
      if (inFlight.size >= (options.maxOpen ?? 200)) continue;
      const ids = Array.from({ length: options.eventsPerRequest }, () => `scale-${sent++}`);
      const request = post(ids);
      inFlight.add(request);
      void request.finally(() => inFlight.delete(request));
    }
  })();
  return {
    answers,
    requests,
    count: (status) => [...answers.values()].filter((a) => a === status).length,
    async stop() {
      loading = false;
      await loop;
      await Promise.all([...inFlight]);
    },
  };
}

/**
 * Every event answered 202 in ClickHouse exactly once and synced to the CRM within `timeoutMs`;
 * no event answered 503 stored; no stored event the test did not send. Returns the counts.
 */
export async function expectDeliveredOnce(p: ClusterPipeline, load: Load, timeoutMs: number) {
  const accepted = [...load.answers].filter(([, a]) => a === 202).map(([id]) => id);
  const refused = new Set([...load.answers].filter(([, a]) => a === 503).map(([id]) => id));
  const ch = p.clickhouse.ch;
  const stored = async () =>
    new Map(
      (
        await ch.query<{ id: string; n: string }>(
          sql`SELECT event_id AS id, count() AS n FROM events FINAL WHERE account_id = ${p.accountId} GROUP BY event_id`,
        )
      ).map((r) => [r.id, Number(r.n)]),
    );
  let missing: string[] = [];
  try {
    await waitFor(
      async () => {
        const have = await stored();
        missing = accepted.filter((id) => !have.has(id));
        if (missing.length > 0)
          throw new Error(`${missing.length} of ${accepted.length} accepted events not in ClickHouse, e.g. ${missing.slice(0, 3).join(', ')}`);
        return true;
      },
      { description: 'every accepted event in ClickHouse', timeoutMs, intervalMs: 1_000 },
    );
  } catch (err) {
    // Where they were lost: which of the pipeline's topics hold them.
    const where = await Promise.all((['eventsRaw', 'eventsUnique'] as const).map((t) => eventIdsIn(p, t).then((ids) => [t, ids] as const))).catch(
      (e: unknown) => String(e),
    );
    const lines = typeof where === 'string' ? where : where.map(([t, ids]) => `${t}: ${missing.filter((id) => ids.has(id)).length} of them`).join('; ');
    throw new Error(`${(err as Error).message}; of the ${missing.length} missing, in ${lines}`, { cause: err });
  }
  const redis = p.redis;
  await waitFor(
    async () => {
      let pending = 0;
      for (let i = 0; i < accepted.length; i += 1_000) {
        const states = await redis.mget(...accepted.slice(i, i + 1_000).map((id) => syncStateKey(p.sinkPrefix, p.accountId, id)));
        pending += states.filter((s) => s === null || !/"state":"synced"/.test(s)).length;
      }
      if (pending > 0) throw new Error(`${pending} of ${accepted.length} accepted events not synced to the CRM`);
      return true;
    },
    { description: 'every accepted event synced to the CRM', timeoutMs, intervalMs: 1_000 },
  );
  const have = await stored();
  const [raw] = await ch.query<{ rows: string; ids: string }>(
    sql`SELECT count() AS rows, uniqExact(event_id) AS ids FROM events WHERE account_id = ${p.accountId}`,
  );
  return {
    accepted: accepted.length,
    /** Event ids stored more than once after FINAL (must be none). */
    storedTwice: [...have].filter(([, n]) => n > 1).map(([id]) => id),
    /** Events answered 503 that were stored anyway (must be none: 503 means not written). */
    refusedButStored: [...refused].filter((id) => have.has(id)),
    /** Stored ids the test never sent (must be none). */
    foreign: [...have.keys()].filter((id) => !load.answers.has(id)),
    /** Rows before merges and distinct ids (copies not merged yet show as rows > ids). */
    rawRows: Number(raw?.rows ?? 0),
    distinct: Number(raw?.ids ?? 0),
  };
}

/**
 * The requests that carried any of `ids`, one line each: when it started (ms from `since`), how
 * long its answer took, the status, and how many of its ids are among `ids`: what a failed check
 * prints, so a failure says which requests and when.
 */
export function describeRequests(load: Load, ids: readonly string[], since: number, limit = 30): string {
  const wanted = new Set(ids);
  const hit = load.requests.filter((r) => r.ids.some((id) => wanted.has(id)));
  const lines = hit
    .slice(0, limit)
    .map(
      (r) =>
        `  ${r.ids[0]}..: started ${r.started - since} ms, answered after ${r.answered - r.started} ms, status ${r.status}, ` +
        `${r.ids.filter((id) => wanted.has(id)).length} of its ${r.ids.length} ids listed`,
    );
  return `${ids.length} ids from ${hit.length} requests (times from the kill):\n${lines.join('\n')}${hit.length > limit ? `\n  … ${hit.length - limit} more` : ''}`;
}

/** The event ids of the test's account in a topic (its JSON values' `eventId`), read to its end. */
async function eventIdsIn(p: ClusterPipeline, topic: TopicKey): Promise<Set<string>> {
  const ids = new Set<string>();
  await readTopicToEnd(p.kafka.kafka, {
    topic: p.kafka.topic(topic),
    logger: testLogger(),
    timeoutMs: 60_000,
    onMessage(m) {
      try {
        const v = JSON.parse(m.value?.toString('utf8') ?? '{}') as { eventId?: unknown; accountId?: unknown };
        if (v.accountId === p.accountId && typeof v.eventId === 'string') ids.add(v.eventId);
      } catch {
        // Not an event (a control or changelog record): not what is looked for.
      }
    },
  });
  return ids;
}

/** The 503s of the run: how many requests, their share, and the time from the first to the last. */
export function unavailability(load: Load) {
  const refused = load.requests.filter((r) => r.status === 503);
  const first = Math.min(...refused.map((r) => r.answered));
  const last = Math.max(...refused.map((r) => r.answered));
  return {
    requests: load.requests.length,
    refused: refused.length,
    share: refused.length / Math.max(1, load.requests.length),
    spanMs: refused.length ? last - first : 0,
  };
}
