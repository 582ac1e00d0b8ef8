import { clickHouseFailureCause } from './errors.js';

/**
 * The rule of /readyz's `clickhouse-replica` lines (docs/scale.md, "A replica whose disk is
 * full"): what one replica's own system tables say of its replication. A writer given several
 * replicas moves off a failing one, so its inserts succeed and nothing else would show that the
 * other replica no longer takes the replicated parts (a full disk fails every fetch with "No
 * space left on device" in `system.replication_queue`).
 */
export const REPLICA_PART = 'clickhouse-replica';

/**
 * Why a replica is unhealthy, with the insert failures' names (errors.ts): `disk_full` (errno 28
 * / "No space left"), `zookeeper` (session expired, read-only, a coordination error),
 * `unreachable` (the server did not answer the watch), `peer_unreachable` (it answers, but its
 * fetches fail because the replica holding the parts does not: the cure is on that other
 * replica, and until it is back this one lacks those parts), `other`.
 */
export type ReplicaCause = 'disk_full' | 'zookeeper' | 'unreachable' | 'peer_unreachable' | 'other';
export const REPLICA_CAUSES: readonly ReplicaCause[] = ['disk_full', 'zookeeper', 'unreachable', 'peer_unreachable', 'other'];

/**
 * A fetch from another replica that could not connect: 18.16 says `Poco::Exception. Code: 1000,
 * e.code() = 111, Connection refused`; timeouts, resets and unknown hosts are the same trouble.
 */
const PEER_CONNECTION = /Connection refused|Connection reset|connect timed out|Timeout: connect|No route to host|Host not found|Network is unreachable/i;

/**
 * A queue entry counts once it has failed this often: a fetch can fail once in normal operation
 * (the part not yet on the replica that announced it, a merge racing a fetch); a full disk or a
 * lost ZooKeeper fails every retry, which 18.16 makes within seconds.
 */
export const FAILED_TRIES_COUNTED = 3;
/** Bounds of a /readyz line, whatever the server says. */
const EXCERPT_CHARS = 200;
const EXCERPT_END_CHARS = 80;
const TABLES_NAMED = 3;

/** A row of `system.replicas` (18.16 has these columns; UInt64 arrive as strings in JSON). */
export interface ReplicaTableRow {
  table: string;
  is_readonly: number | string;
  is_session_expired: number | string;
  queue_size: number | string;
  absolute_delay: number | string;
}

/** A row of `system.replication_queue` with a non-empty `last_exception`. */
export interface QueueFailureRow {
  table: string;
  num_tries: number | string;
  last_exception: string;
}

export interface ReplicaVerdict {
  /** `host:port` of the server, never its credentials. */
  replica: string;
  /** Undefined: healthy. */
  cause?: ReplicaCause;
  /** Bounded, for /readyz and the log. */
  detail: string;
}

/** How a server of CLICKHOUSE_URL is named in /readyz, logs and the gauge: `host:port`, no credentials or path. */
export function replicaName(url: string): string {
  try {
    const parsed = new URL(url);
    const port = parsed.port || (parsed.protocol === 'https:' ? '443' : '80');
    return `${parsed.hostname}:${port}`;
  } catch {
    return 'unparsable-url';
  }
}

/**
 * The first line of a server's text, bounded, with any `user:password@` of a URL in it removed,
 * and without 18.16's `e.displayText() = ` and `, e.what() = …` wrapping. A long one keeps its
 * start (the code) and its end (`errno: 28, strerror: No space left on device` comes after a
 * long file path).
 */
export function excerpt(text: string): string {
  const line = (text.split('\n')[0] ?? '')
    .replace(/\/\/[^/@\s]*@/g, '//')
    .replace(/e\.displayText\(\) = /, '')
    .replace(/, e\.what\(\) = .*$/, '')
    .trim();
  return line.length > EXCERPT_CHARS ? `${line.slice(0, EXCERPT_CHARS - EXCERPT_END_CHARS)}…${line.slice(-EXCERPT_END_CHARS)}` : line;
}

/** The cause of one queue entry's exception, by the insert failures' rule (errors.ts). */
export function causeOfException(text: string): ReplicaCause {
  const cause = clickHouseFailureCause(new Error(text));
  if (cause === 'disk_full' || cause === 'zookeeper') return cause;
  return PEER_CONNECTION.test(text) ? 'peer_unreachable' : 'other';
}

const SEVERITY: Record<ReplicaCause, number> = { disk_full: 4, zookeeper: 3, unreachable: 2, peer_unreachable: 1, other: 0 };

function worst(causes: Iterable<ReplicaCause>): ReplicaCause | undefined {
  let found: ReplicaCause | undefined;
  for (const c of causes) if (found === undefined || SEVERITY[c] > SEVERITY[found]) found = c;
  return found;
}

/**
 * One replica's verdict from its tables of the service's database. Its worst cause names it (a
 * full disk first: the operator must free space; a ZooKeeper outage shows on every replica).
 */
export function judgeReplica(replica: string, tables: readonly ReplicaTableRow[], failures: readonly QueueFailureRow[]): ReplicaVerdict {
  const counted = failures.filter((f) => Number(f.num_tries) >= FAILED_TRIES_COUNTED && f.last_exception !== '');
  const withoutZooKeeper = tables.filter((t) => Number(t.is_readonly) === 1 || Number(t.is_session_expired) === 1);
  const byCause = counted.map((f) => ({ cause: causeOfException(f.last_exception), failure: f }));
  const cause = worst([...byCause.map((b) => b.cause), ...(withoutZooKeeper.length > 0 ? ['zookeeper' as const] : [])]);
  const queued = tables.reduce((sum, t) => sum + Number(t.queue_size), 0);
  const delay = tables.reduce((most, t) => Math.max(most, Number(t.absolute_delay)), 0);
  const backlog = `queue ${queued}, ${delay} s behind`;
  if (cause === undefined) return { replica, detail: backlog };
  const parts: string[] = [];
  const example = byCause.find((b) => b.cause === cause)?.failure;
  if (counted.length > 0) {
    const names = [...new Set(counted.map((f) => f.table))];
    const shown = names.slice(0, TABLES_NAMED).join(', ') + (names.length > TABLES_NAMED ? ` and ${names.length - TABLES_NAMED} more` : '');
    parts.push(`${counted.length} queue entries failing in ${shown}${example ? `, e.g. "${excerpt(example.last_exception)}"` : ''}`);
  }
  if (withoutZooKeeper.length > 0) parts.push(`${withoutZooKeeper.length} tables read-only or without a ZooKeeper session`);
  parts.push(backlog);
  return { replica, cause, detail: parts.join('; ') };
}

/** A replica that did not answer the watch's queries. */
export function judgeUnanswered(replica: string, err: unknown): ReplicaVerdict {
  const cause = clickHouseFailureCause(err);
  const text = err instanceof Error ? err.message : String(err);
  // A server that answers with an error keeps its cause (ZooKeeper lost, refused user: `other`).
  const named: ReplicaCause = cause === 'disk_full' || cause === 'zookeeper' || cause === 'other' ? cause : 'unreachable';
  return { replica, cause: named, detail: `replica check failed: ${excerpt(text)}` };
}

/** The verdict as /readyz says it: one bounded line with the cause. */
export function describeReplica(verdict: ReplicaVerdict): string {
  const what = verdict.cause === 'unreachable' ? 'unreachable' : 'replication failing';
  return `${REPLICA_PART} ${verdict.replica}: ${what} (cause: ${verdict.cause ?? 'none'}; ${verdict.detail})`;
}
