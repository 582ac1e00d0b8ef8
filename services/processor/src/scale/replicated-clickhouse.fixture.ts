/**
 * What the replicated-ClickHouse scale tests share: the file's ClickHouse is the local cluster
 * (ZooKeeper and two 18.16 replicas, started or reused), so the fixtures' database is made ON
 * CLUSTER and the gateway and processors get both replicas in CLICKHOUSE_URL; a processor on
 * both replicas with an account and the requests to load it; and the counts of one replica,
 * read from that replica alone.
 */
import type { Account } from '@ingest/domain';
import { createClickHouse, sql } from '@ingest/platform';
import { CLUSTER_NAME, clusterUrls, ProcessorFleet, processorSetup, type Replica, replicaUrl, type ServiceProcess, startCluster } from '@ingest/testkit';
import type { GatewayFixture } from '@ingest/testkit/gateway';
import { type ApiClient, testEvent } from '@ingest/testkit/processor';
import { afterAll, beforeAll } from 'vitest';

/** Call at the top of the file, before the gateway fixture: its database is made on the cluster. */
export function useReplicatedClickHouse(label: string): { startedAt: number } {
  const startedAt = Date.now();
  const saved = { url: process.env.CLICKHOUSE_URL, cluster: process.env.CLICKHOUSE_CLUSTER };
  beforeAll(async () => {
    await startCluster();
    process.env.CLICKHOUSE_URL = clusterUrls();
    process.env.CLICKHOUSE_CLUSTER = CLUSTER_NAME;
    console.log(`${label}: cluster up after ${Math.round((Date.now() - startedAt) / 1000)} s`);
  }, 240_000);
  afterAll(() => {
    process.env.CLICKHOUSE_URL = saved.url;
    if (saved.cluster === undefined) delete process.env.CLICKHOUSE_CLUSTER;
    else process.env.CLICKHOUSE_CLUSTER = saved.cluster;
  });
  return { startedAt };
}

export interface ReplicatedLoad {
  fleet: ProcessorFleet;
  processor: ServiceProcess;
  account: Account;
  apiKey: string;
  /** The gateway app in process, with the account's key. */
  client: ApiClient;
  database: string;
  /** `total` events in requests of `perRequest`, ids `${idPrefix}-0`, `${idPrefix}-1`...: what the test posts. */
  requests: ReturnType<typeof testEvent>[][];
}

/**
 * Call after useGatewayFixture: `start` runs a processor with both replicas in CLICKHOUSE_URL
 * and makes an account and its requests; its processors are killed after the file.
 */
export function useReplicatedProcessor(
  gw: GatewayFixture,
  label: string,
  /** More settings of the processor. */
  env: Record<string, string> = {},
): { start(load: { idPrefix: string; total: number; perRequest: number }): Promise<ReplicatedLoad> } {
  let fleet: ProcessorFleet | undefined;
  afterAll(async () => {
    await fleet?.killAll();
  });
  return {
    async start({ idPrefix, total, perRequest }) {
      const setup = processorSetup(gw.kafka.prefix, gw.clickhouse.database, label, {
        CLICKHOUSE_URL: clusterUrls(),
        // Many small inserts, so a kill lands between and during them.
        STORAGE_BATCH_MAX_WAIT_MS: '200',
        STORAGE_MIN_INSERT_INTERVAL_MS: '100',
        ...env,
      });
      fleet = new ProcessorFleet(setup);
      const processor = await fleet.start();
      const { account, apiKey } = await gw.newAccount('pro');
      const requests = Array.from({ length: total / perRequest }, (_, r) =>
        Array.from({ length: perRequest }, (_, i) => testEvent(`${idPrefix}-${r * perRequest + i}`, r * perRequest + i)),
      );
      return { fleet, processor, account, apiKey, client: { app: gw.app, apiKey }, database: gw.clickhouse.database, requests };
    },
  };
}

/** count() and uniqExact(event_id) of the account on one replica, without FINAL. */
export async function countsOn(replica: Replica, database: string, accountId: string): Promise<{ rows: number; distinct: number }> {
  const ch = createClickHouse({ url: replicaUrl(replica), database, requestTimeoutMs: 5_000 });
  try {
    const [row] = await ch.query<{ rows: string; distinct: string }>(
      sql`SELECT count() AS rows, uniqExact(event_id) AS distinct FROM events WHERE account_id = ${accountId}`,
    );
    return { rows: Number(row?.rows ?? 0), distinct: Number(row?.distinct ?? 0) };
  } finally {
    await ch.close();
  }
}
