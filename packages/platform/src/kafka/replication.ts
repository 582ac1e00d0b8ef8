/**
 * The replication settings topic provisioning applies (docs/kafka.md, "Replication"): each new
 * topic on `replicationFactor` brokers, with `min.insync.replicas` as its config, so a produce
 * with acks=all (every producer here) is acknowledged only once that many replicas have it.
 * 1/1 on the single local broker; 3/2 on a cluster, where one broker may be lost without losing
 * an acknowledged write or refusing new ones.
 */
export interface ReplicationSettings {
  replicationFactor: number;
  minInsyncReplicas: number;
}

export const SINGLE_BROKER_REPLICATION: ReplicationSettings = { replicationFactor: 1, minInsyncReplicas: 1 };

/** Why these settings cannot be provisioned on a cluster of `brokers` brokers; undefined when they can. */
export function replicationProblem(settings: ReplicationSettings, brokers: number): string | undefined {
  const { replicationFactor: rf, minInsyncReplicas: isr } = settings;
  if (!Number.isInteger(rf) || rf < 1) return `KAFKA_REPLICATION_FACTOR must be a whole number of at least 1, got ${rf}`;
  if (!Number.isInteger(isr) || isr < 1) return `KAFKA_MIN_INSYNC_REPLICAS must be a whole number of at least 1, got ${isr}`;
  if (isr > rf) {
    return `KAFKA_MIN_INSYNC_REPLICAS=${isr} is more than KAFKA_REPLICATION_FACTOR=${rf}: no write with acks=all could ever be acknowledged`;
  }
  if (rf > brokers) {
    return `KAFKA_REPLICATION_FACTOR=${rf} needs at least ${rf} brokers, but the cluster has ${brokers}: lower it (1 for the single local broker) or add brokers`;
  }
  return undefined;
}

/** A topic's config with the deployment's min.insync.replicas. */
export function withMinInsyncReplicas(config: Readonly<Record<string, string>>, settings: ReplicationSettings): Record<string, string> {
  return { ...config, 'min.insync.replicas': String(settings.minInsyncReplicas) };
}
