import { hostname, userInfo } from 'node:os';
import type { AuditEntry } from '@ingest/domain';
import { deadLetterAccountId, type DeadLetterEntry, type DeadLetterSelection, entryPosition } from '@ingest/platform';

/**
 * What the audit log says about a replay made with the dead-letter CLI (docs/admin.md, "The
 * audit log"): the same action as a dashboard replay, `dead_letter.replay`, one record per
 * account whose letters were sent (letters that belong to no account share one record with
 * `accountId: null`). A record names what was replayed by ids only: the dead-letter topic, where
 * the letters went, how many, the selection (code or positions), their positions, codes and
 * event ids. Never a key or value: those are event contents.
 *
 * The CLI talks to Kafka directly, without an admin token, so the actor is the operator it runs
 * for: INGEST_OPERATOR, else the operating-system user. "From where" is the host it ran on.
 */
export const REPLAY_AUDIT_ACTION = 'dead_letter.replay';
/** The CLI's records are told apart from the admin API's by this role. */
export const CLI_ACTOR_ROLE = 'cli';

/** Positions and event ids listed per record; `count` says how many there were in all. */
const MAX_LISTED = 100;
const ACCOUNT_ID = /^[A-Za-z0-9_-]{1,64}$/;
const EVENT_ID_MAX = 128;

export interface ReplayAuditContext {
  operator: string;
  host: string;
  requestId: string;
  at: Date;
  topicPrefix: string;
  /** The dead-letter topic read (with prefix). */
  deadLetterTopic: string;
  /** Where each letter was sent (with prefix). */
  targetOf(entry: DeadLetterEntry): string;
  selection: DeadLetterSelection;
}

export function replayAuditEntries(entries: readonly DeadLetterEntry[], ctx: ReplayAuditContext): AuditEntry[] {
  const byAccount = new Map<string | null, DeadLetterEntry[]>();
  for (const entry of entries) {
    const account = deadLetterAccountId(entry);
    const key = account !== undefined && ACCOUNT_ID.test(account) ? account : null;
    const letters = byAccount.get(key);
    if (letters) letters.push(entry);
    else byAccount.set(key, [entry]);
  }
  const bare = (topic: string) => (topic.startsWith(ctx.topicPrefix) ? topic.slice(ctx.topicPrefix.length) : topic);
  const deadLetterTopic = bare(ctx.deadLetterTopic);
  return [...byAccount].map(([accountId, letters]) => ({
    at: ctx.at,
    actor: { type: 'admin', name: ctx.operator, role: CLI_ACTOR_ROLE },
    action: REPLAY_AUDIT_ACTION,
    accountId,
    // As the dashboard names a single letter; several are named by their topic.
    target: letters.length === 1 ? `${deadLetterTopic}/${entryPosition(letters[0] as DeadLetterEntry)}` : deadLetterTopic,
    ip: ctx.host,
    requestId: ctx.requestId,
    after: {
      to: [...new Set(letters.map((e) => bare(ctx.targetOf(e))))].sort().join(','),
      count: letters.length,
      filter: 'code' in ctx.selection ? { code: ctx.selection.code } : { positions: ctx.selection.positions.slice(0, MAX_LISTED) },
      positions: letters.slice(0, MAX_LISTED).map(entryPosition),
      codes: [...new Set(letters.map((e) => e.code))].sort(),
      eventIds: letters.slice(0, MAX_LISTED).flatMap((e) => eventIdOf(e) ?? []),
    },
  }));
}

/** The letter's event id, if its value is an event with a plausible one. */
function eventIdOf(entry: DeadLetterEntry): string | undefined {
  try {
    const parsed = JSON.parse(entry.value?.toString('utf8') ?? '') as { eventId?: unknown };
    return typeof parsed.eventId === 'string' && parsed.eventId.length <= EVENT_ID_MAX ? parsed.eventId : undefined;
  } catch {
    return undefined;
  }
}

/** INGEST_OPERATOR, else the OS user (some containers run a uid without a name). */
export function operatorName(configured: string | undefined): string {
  if (configured !== undefined) return configured;
  try {
    return userInfo().username;
  } catch {
    return `uid-${process.getuid?.() ?? 'unknown'}`;
  }
}

/** The audit record's `ip` ("from where") holds at most 64 characters. */
export function hostName(): string {
  return hostname().slice(0, 64);
}
