import { describe, expect, it } from 'vitest';
import { replicationProblem, SINGLE_BROKER_REPLICATION, withMinInsyncReplicas } from './replication.js';

describe('replication settings', () => {
  it('accepts 1/1 on one broker and 3/2 on three or more', () => {
    expect(replicationProblem(SINGLE_BROKER_REPLICATION, 1)).toBeUndefined();
    expect(replicationProblem({ replicationFactor: 3, minInsyncReplicas: 2 }, 3)).toBeUndefined();
    expect(replicationProblem({ replicationFactor: 3, minInsyncReplicas: 2 }, 5)).toBeUndefined();
  });

  it('refuses a replication factor above the brokers the cluster has, naming both', () => {
    expect(replicationProblem({ replicationFactor: 3, minInsyncReplicas: 2 }, 1)).toBe(
      'KAFKA_REPLICATION_FACTOR=3 needs at least 3 brokers, but the cluster has 1: lower it (1 for the single local broker) or add brokers',
    );
    expect(replicationProblem({ replicationFactor: 2, minInsyncReplicas: 1 }, 1)).toMatch(/the cluster has 1/);
  });

  it('refuses min.insync.replicas above the replication factor, and values below 1', () => {
    expect(replicationProblem({ replicationFactor: 2, minInsyncReplicas: 3 }, 3)).toMatch(
      /KAFKA_MIN_INSYNC_REPLICAS=3 is more than KAFKA_REPLICATION_FACTOR=2/,
    );
    expect(replicationProblem({ replicationFactor: 0, minInsyncReplicas: 1 }, 3)).toMatch(/KAFKA_REPLICATION_FACTOR must be/);
    expect(replicationProblem({ replicationFactor: 1, minInsyncReplicas: 0 }, 3)).toMatch(/KAFKA_MIN_INSYNC_REPLICAS must be/);
  });

  it("adds min.insync.replicas to a topic's config and keeps the rest", () => {
    expect(withMinInsyncReplicas({ 'cleanup.policy': 'compact' }, { replicationFactor: 3, minInsyncReplicas: 2 })).toEqual({
      'cleanup.policy': 'compact',
      'min.insync.replicas': '2',
    });
  });
});
