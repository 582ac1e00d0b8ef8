import { AppError } from '@ingest/platform';
import type { Redis } from '@ingest/platform';

/**
 * The CRM sync state of each event, written by the crm-sink and read by the gateway for
 * `GET /v1/events/{eventId}`. An event without an entry is `pending`: not handled by the sink
 * yet (or its entry expired). Entries live in Redis with a TTL: this is a status display, not
 * the ledger that guards exactly-once effects.
 */
export const SYNC_STATES = ['pending', 'synced', 'skipped', 'failed'] as const;
export type SyncStateName = (typeof SYNC_STATES)[number];

export interface EventSyncState {
  state: SyncStateName;
  /** Why skipped or failed, e.g. `no_mapping`, `no_rule_matched`, or the CRM's error message. */
  reason?: string;
  /** ISO 8601, when the sink recorded the state. */
  updatedAt?: string;
}

export interface SyncStateUpdate {
  accountId: string;
  eventId: string;
  state: Exclude<SyncStateName, 'pending'>;
  reason?: string;
}

export interface SyncStateStore {
  /** One round trip for many events; resolves when Redis has them all. */
  record(updates: readonly SyncStateUpdate[]): Promise<void>;
  read(accountId: string, eventId: string): Promise<EventSyncState>;
  /** Many events of one account in one round trip (MGET), in the order given. */
  readMany(accountId: string, eventIds: readonly string[]): Promise<EventSyncState[]>;
}

export const DEFAULT_SYNC_STATE_TTL_SECONDS = 30 * 24 * 3600;
const MAX_REASON_LENGTH = 500;

/** The account in braces is a Redis Cluster hash tag; ids are URI-encoded so `:` cannot be forged. */
export function syncStateKey(prefix: string, accountId: string, eventId: string): string {
  return `${prefix}crm:sync:{${encodeURIComponent(accountId)}}:${encodeURIComponent(eventId)}`;
}

export function createSyncStateStore(deps: { redis: Redis; keyPrefix?: string; ttlSeconds?: number; now?: () => number }): SyncStateStore {
  const prefix = deps.keyPrefix ?? '';
  const ttl = deps.ttlSeconds ?? DEFAULT_SYNC_STATE_TTL_SECONDS;
  const now = deps.now ?? Date.now;
  return {
    async record(updates) {
      if (updates.length === 0) return;
      const updatedAt = new Date(now()).toISOString();
      const pipeline = deps.redis.pipeline();
      for (const u of updates) {
        const value: EventSyncState = { state: u.state, ...(u.reason !== undefined ? { reason: u.reason.slice(0, MAX_REASON_LENGTH) } : {}), updatedAt };
        pipeline.set(syncStateKey(prefix, u.accountId, u.eventId), JSON.stringify(value), 'EX', ttl);
      }
      const results = (await pipeline.exec()) ?? [];
      const failed = results.find(([err]) => err !== null);
      if (failed) throw new AppError('sync_state_unavailable', `recording sync state failed: ${failed[0]?.message ?? 'unknown'}`, { retryable: true });
    },
    async read(accountId, eventId) {
      const raw = await deps.redis.get(syncStateKey(prefix, accountId, eventId));
      return raw === null ? { state: 'pending' } : parseState(raw);
    },
    async readMany(accountId, eventIds) {
      if (eventIds.length === 0) return [];
      const raws = await deps.redis.mget(...eventIds.map((id) => syncStateKey(prefix, accountId, id)));
      return raws.map((raw) => (raw === null ? { state: 'pending' as const } : parseState(raw)));
    },
  };
}

function parseState(raw: string): EventSyncState {
  try {
    const parsed = JSON.parse(raw) as EventSyncState;
    if ((SYNC_STATES as readonly string[]).includes(parsed.state)) return parsed;
  } catch {
    // fall through: an unreadable entry shows as pending rather than failing the read-back
  }
  return { state: 'pending' };
}
