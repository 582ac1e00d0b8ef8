/**
 * What the replicated-ClickHouse scale tests share: the file's ClickHouse is the local cluster
 * (ZooKeeper and two 18.16 replicas, started or reused), so the fixtures' database is made ON
 * CLUSTER and the gateway and processors get both replicas in CLICKHOUSE_URL; and the counts of
 * one replica, read from that replica alone.
 */
import { createClickHouse, sql } from '@ingest/platform';
import { CLUSTER_NAME, CLUSTER_URLS, type Replica, replicaUrl, startCluster } from '@ingest/testkit';
import { afterAll, beforeAll } from 'vitest';

/** Call at the top of the file, before the gateway fixture: its database is made on the cluster. */
export function useReplicatedClickHouse(label: string): { startedAt: number } {
  const startedAt = Date.now();
  const saved = { url: process.env.CLICKHOUSE_URL, cluster: process.env.CLICKHOUSE_CLUSTER };
  beforeAll(async () => {
    await startCluster();
    process.env.CLICKHOUSE_URL = CLUSTER_URLS;
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
