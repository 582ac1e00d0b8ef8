import { describe, expect, it } from 'vitest';
import { clusterScriptDefault, clusterUrls, replicaUrl } from './clickhouse-cluster.js';

describe('the local ClickHouse cluster as the tests address it', () => {
  it("takes the replicas' ports from scripts/stack-clickhouse-cluster.sh's defaults", () => {
    const base = Number(clusterScriptDefault('CLICKHOUSE_REPLICA_HTTP_PORT'));
    expect(Number.isInteger(base) && base > 0).toBe(true);
    // The environment of this run may move the cluster (the script reads the same variable).
    const expected = Number(process.env.CLICKHOUSE_REPLICA_HTTP_PORT || base);
    expect([replicaUrl(1), replicaUrl(2)]).toEqual([`http://127.0.0.1:${expected}`, `http://127.0.0.1:${expected + 1}`]);
    expect(clusterUrls()).toBe(`${replicaUrl(1)},${replicaUrl(2)}`);
  });

  it('names a setting the script does not have', () => {
    expect(() => clusterScriptDefault('NO_SUCH_SETTING')).toThrow(/no default for NO_SUCH_SETTING/);
  });
});
