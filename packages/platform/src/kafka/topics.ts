/**
 * Every Kafka topic the system uses, with how it is provisioned. Services refer to topics by
 * their logical key; `topicName()` applies the deployment's prefix.
 *
 * Partition counts bound consumer parallelism: processors and sinks scale up to that many
 * replicas. Raising them later is possible (docs/runbook.md, "Adding partitions") but re-keys data,
 * so they start generous for the event topics.
 */
export interface TopicSpec {
  /** Name without prefix. */
  readonly name: string;
  readonly partitions: number;
  readonly config: Readonly<Record<string, string>>;
  readonly purpose: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;
/** How long Kafka keeps the audit log (its ClickHouse copy keeps it for good). */
export const AUDIT_RETENTION_DAYS = 730;

export const TOPICS = {
  eventsRaw: {
    name: 'events.raw',
    partitions: 12,
    config: { 'retention.ms': String(7 * DAY_MS), 'cleanup.policy': 'delete', 'max.message.bytes': String(4 * 1024 * 1024) },
    purpose: 'accepted events as received, keyed by account and eventId so copies share a partition',
  },
  dedupeChangelog: {
    name: 'dedupe.changelog',
    // Must equal events.raw's partitions: partition p of this changelog holds the dedupe state
    // of partition p of events.raw (a unit test checks it).
    partitions: 12,
    config: { 'cleanup.policy': 'delete', 'retention.ms': String(8 * DAY_MS), 'max.message.bytes': String(4 * 1024 * 1024) },
    purpose: 'first-seen marks of (account, eventId) in batches, co-partitioned with events.raw, restored on partition assignment',
  },
  eventsUnique: {
    name: 'events.unique',
    partitions: 12,
    config: { 'retention.ms': String(7 * DAY_MS), 'cleanup.policy': 'delete', 'max.message.bytes': String(4 * 1024 * 1024) },
    purpose: 'deduplicated events keyed by account and identity, the source for storage and CRM sync',
  },
  jobChunks: {
    name: 'jobs.chunks',
    partitions: 6,
    config: { 'retention.ms': String(7 * DAY_MS), 'cleanup.policy': 'delete', 'max.message.bytes': String(8 * 1024 * 1024) },
    purpose: 'bulk and CSV jobs as chunks of up to 500 events',
  },
  jobProgress: {
    name: 'jobs.progress',
    partitions: 3,
    config: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' },
    purpose: 'latest progress of every job, keyed by jobId (compacted)',
  },
  deadLetters: {
    name: 'events.deadletter',
    partitions: 3,
    config: { 'retention.ms': String(30 * DAY_MS), 'cleanup.policy': 'delete', 'max.message.bytes': String(8 * 1024 * 1024) },
    purpose: 'messages that could not be processed, with the reason and their origin',
  },
  crmDeadLetters: {
    name: 'crm.deadletter',
    partitions: 3,
    config: { 'retention.ms': String(30 * DAY_MS), 'cleanup.policy': 'delete', 'max.message.bytes': String(8 * 1024 * 1024) },
    purpose: 'events whose CRM write failed for good (after the retry budget, or refused by the CRM), with the reason and their origin',
  },
  crmReplay: {
    // Replayed CRM dead letters go here, not back to events.unique: storage must not see them
    // again, and only the crm-sink group reads this topic.
    name: 'crm.replay',
    partitions: 3,
    config: { 'retention.ms': String(7 * DAY_MS), 'cleanup.policy': 'delete', 'max.message.bytes': String(4 * 1024 * 1024) },
    purpose: 'CRM dead letters replayed by the deadletters CLI, consumed by the crm-sink only',
  },
  controlAccounts: {
    name: 'control.accounts',
    partitions: 1,
    config: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' },
    purpose: 'accounts and plans, keyed by accountId (compacted)',
  },
  controlApiKeys: {
    name: 'control.apikeys',
    partitions: 1,
    config: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' },
    purpose: 'API key hashes and revocations, keyed by key id (compacted)',
  },
  controlOwners: {
    name: 'control.owners',
    partitions: 1,
    config: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' },
    purpose: 'dashboard owners (email, scrypt password hash, account), keyed by email (compacted)',
  },
  controlMappings: {
    name: 'control.mappings',
    partitions: 1,
    config: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' },
    // Every version has its own key (<accountId>/<version>/<writeId>), so compaction keeps them all.
    purpose: 'CRM mapping versions, one key per version (compacted, all versions kept)',
  },
  controlCrmCredentials: {
    name: 'control.crm-credentials',
    partitions: 1,
    config: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' },
    purpose: 'CRM credentials, keyed by <accountId>/<name> (compacted)',
  },
  controlAdmins: {
    name: 'control.admins',
    partitions: 1,
    config: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' },
    purpose: 'named admins of the admin API: name, role, SHA-256 of each token, revocations; keyed by credential id (compacted)',
  },
  auditLog: {
    name: 'audit.log',
    partitions: 3,
    // Not compacted: every record is kept for the retention (two years here; the ClickHouse copy
    // has no TTL at all). Nothing rewrites or deletes a record.
    config: { 'cleanup.policy': 'delete', 'retention.ms': String(AUDIT_RETENTION_DAYS * DAY_MS), 'max.message.bytes': String(1024 * 1024) },
    purpose: 'the audit log: every state change by an admin or dashboard owner (who, what, when, from where, before/after without secrets)',
  },
  erasures: {
    // The erasure suppression list. Its key is not `control*` on purpose: the control planes
    // subscribe to every `control*` key they may read, and this list is followed by its own
    // reader (packages/domain/src/erasure/suppression.list.ts). Compacted: one record per
    // (account, identifier hash), kept for good; nothing in it is an email or domain in clear.
    name: 'control.erasures',
    partitions: 1,
    config: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' },
    purpose: 'erasure suppression list: account and SHA-256 of an erased email or domain, keyed <accountId>/<type>/<hash> (compacted)',
  },
  identities: {
    // The per-account identity map (packages/domain/src/identity/): userId / anonymousId to email,
    // domain or linked user. Compacted, kept for good; erasure writes tombstones. Its Redis index
    // is rebuilt from here when Redis lost it.
    name: 'identities',
    partitions: 6,
    config: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' },
    purpose: 'identity map: keyed <accountId>:u:<userId> or <accountId>:a:<anonymousId>, value email/domain/linked userId (compacted)',
  },
  billingLedger: {
    name: 'billing.ledger',
    partitions: 3,
    // Every record has its own key and is written once (see schemas/src/billing-ledger.ts), so
    // compaction removes nothing; no retention by time.
    config: { 'cleanup.policy': 'compact', 'min.compaction.lag.ms': '60000' },
    purpose: 'closed billing records per account and month, and plan changes, one key per record, never rewritten (compacted)',
  },
} as const satisfies Record<string, TopicSpec>;

export type TopicKey = keyof typeof TOPICS;

export function topicName(prefix: string, key: TopicKey): string {
  return `${prefix}${TOPICS[key].name}`;
}

export function allTopicSpecs(): TopicSpec[] {
  return Object.values(TOPICS);
}
