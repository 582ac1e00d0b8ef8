import type { EventRecord } from '@ingest/schemas';
import { IDENTITY_RECORD_VERSION, type IdentityEntry, type PersonRef } from './identity-record.js';

/**
 * What one event teaches the identity map and what the map gives it (docs/segment.md). Pure:
 * the caller supplies the entries it knows (`lookUp`) and writes what is returned.
 *
 * - `$identify` with an email: `u:<userId>` gets the email; with an anonymousId too,
 *   `a:<anonymousId>` is linked to the user. Without a userId, `a:<anonymousId>` gets the email.
 * - `$group` with a domain: the sender's entry (`u:` else `a:`) gets the domain.
 * - `$alias`: `a:<previousId>` is linked to the user (and the user gets the email the previous
 *   id had when the user has none). Refused (`conflict`) when both are already known under
 *   different emails: two people are never merged silently.
 */
export type LookUp = (ref: PersonRef) => IdentityEntry | undefined;

export interface IdentityLinks {
  writes: [PersonRef, IdentityEntry][];
  /** Why an alias was refused; the event itself is still stored. */
  conflict?: string;
}

export function personRef(record: Pick<EventRecord, 'userId' | 'anonymousId'>): PersonRef | undefined {
  if (record.userId !== undefined) return `u:${record.userId}`;
  if (record.anonymousId !== undefined) return `a:${record.anonymousId}`;
  return undefined;
}

function previousIdOf(record: EventRecord): string | undefined {
  const previous = record.properties.previousId;
  return typeof previous === 'string' && previous.length > 0 && previous.length <= 255 ? previous : undefined;
}

/** Every entry `linksOf` and `joinedRecord` may read for this record (one Redis round trip per batch). */
export function refsToLookUp(record: EventRecord, linkedUserIds: readonly string[] = []): PersonRef[] {
  const refs = new Set<PersonRef>();
  if (record.userId !== undefined) refs.add(`u:${record.userId}`);
  if (record.anonymousId !== undefined) refs.add(`a:${record.anonymousId}`);
  const previous = record.eventName === '$alias' ? previousIdOf(record) : undefined;
  if (previous !== undefined) {
    refs.add(`a:${previous}`);
    refs.add(`u:${previous}`);
  }
  for (const userId of linkedUserIds) refs.add(`u:${userId}`);
  return [...refs];
}

/** Email and domain the map knows for a person: its own entry, else (for `a:`) the user it is linked to. */
export function resolvePerson(ref: PersonRef, lookUp: LookUp): { email?: string; domain?: string } | undefined {
  const entry = lookUp(ref);
  if (entry?.email !== undefined || entry?.domain !== undefined)
    return { ...(entry.email ? { email: entry.email } : {}), ...(entry.domain ? { domain: entry.domain } : {}) };
  if (ref.startsWith('a:') && entry?.userId !== undefined) {
    const user = lookUp(`u:${entry.userId}`);
    if (user?.email !== undefined || user?.domain !== undefined)
      return { ...(user.email ? { email: user.email } : {}), ...(user.domain ? { domain: user.domain } : {}) };
  }
  return undefined;
}

function merged(current: IdentityEntry | undefined, change: Partial<Omit<IdentityEntry, 'v' | 'updatedAt'>>, at: number): IdentityEntry {
  return { ...(current ?? {}), ...change, v: IDENTITY_RECORD_VERSION, updatedAt: Math.max(at, (current?.updatedAt ?? 0) + 1) };
}

/** Unchanged entries are not written again (a retried identify writes nothing new). */
function changes(current: IdentityEntry | undefined, change: Partial<Omit<IdentityEntry, 'v' | 'updatedAt'>>): boolean {
  return Object.entries(change).some(([k, v]) => current?.[k as keyof IdentityEntry] !== v);
}

export function linksOf(record: EventRecord, lookUp: LookUp, at: number): IdentityLinks {
  const writes: [PersonRef, IdentityEntry][] = [];
  const write = (ref: PersonRef, change: Partial<Omit<IdentityEntry, 'v' | 'updatedAt'>>) => {
    const current = lookUp(ref);
    if (changes(current, change)) writes.push([ref, merged(current, change, at)]);
  };
  const { userId, anonymousId } = record;
  if (record.eventName === '$identify' && record.email !== null) {
    if (userId !== undefined) {
      write(`u:${userId}`, { email: record.email });
      if (anonymousId !== undefined) write(`a:${anonymousId}`, { userId });
    } else if (anonymousId !== undefined) write(`a:${anonymousId}`, { email: record.email });
  } else if (record.eventName === '$group' && record.domain !== null) {
    const ref = personRef(record);
    if (ref) write(ref, { domain: record.domain });
  } else if (record.eventName === '$alias' && userId !== undefined) {
    const previous = previousIdOf(record);
    if (previous === undefined || previous === userId) return { writes };
    const before = resolvePerson(`a:${previous}`, lookUp) ?? resolvePerson(`u:${previous}`, lookUp);
    const user = resolvePerson(`u:${userId}`, lookUp);
    if (before?.email !== undefined && user?.email !== undefined && before.email !== user.email) {
      return { writes, conflict: 'alias would merge two people known under different emails; the link was not made' };
    }
    write(`a:${previous}`, { userId });
    if (user?.email === undefined && before?.email !== undefined) write(`u:${userId}`, { email: before.email });
  }
  return { writes };
}

/**
 * The record with the email and domain the map knows, for an event that has neither of its own
 * (`identitySource: "map"`); undefined when it has one or the map knows nothing.
 */
export function joinedRecord(record: EventRecord, lookUp: LookUp): EventRecord | undefined {
  if (record.email !== null || record.domain !== null) return undefined;
  const ref = personRef(record);
  const known =
    (ref && resolvePerson(ref, lookUp)) ??
    (record.userId !== undefined && record.anonymousId !== undefined ? resolvePerson(`a:${record.anonymousId}`, lookUp) : undefined);
  if (!known) return undefined;
  return { ...record, email: known.email ?? null, domain: known.domain ?? null, identitySource: 'map' };
}
