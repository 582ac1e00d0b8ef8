import type { EventRecord } from '@ingest/schemas';
import type { OutgoingMessage } from '@ingest/platform';

/**
 * The header that lets dedupe pass an event on without parsing it: the record's identity (email,
 * else domain, else empty), from which events.unique's key is built. Only our own producers (the
 * gateway and the job runner, both after validation) set it; a message without it is decoded
 * and checked in full.
 */
export const IDENTITY_HEADER = 'ingest-identity';

/**
 * How an accepted event is written to events.raw, by every producer: keyed `accountId:eventId`
 * so that all copies of an event share a partition, and carrying the identity header.
 */
export function rawEventMessage(record: EventRecord): OutgoingMessage {
  return {
    key: rawEventKey(record.accountId, record.eventId),
    value: JSON.stringify(record),
    headers: { [IDENTITY_HEADER]: identityOf(record) },
  };
}

/**
 * events.raw's key, which is also the dedupe key: every copy of an event has the same one. The
 * account id is `acc_` + base62, so the first colon separates it from the eventId unambiguously.
 */
export function rawEventKey(accountId: string, eventId: string): string {
  return `${accountId}:${eventId}`;
}

/** The account and eventId of an events.raw key; undefined for a key our producers never write. */
export function parseRawEventKey(key: string): { accountId: string; eventId: string } | undefined {
  const colon = key.indexOf(':');
  if (colon < 1 || colon === key.length - 1 || !key.startsWith('acc_')) return undefined;
  return { accountId: key.slice(0, colon), eventId: key.slice(colon + 1) };
}

/**
 * Whom an event is about, as its own fields say (never the identity map's enrichment): a Segment
 * sender's person first, `u:<userId>` else `a:<anonymousId>`, even when the message carries an
 * email, so an identify and every track of one user share an events.unique partition and stay in
 * order (docs/segment.md); else its email, else its domain, else nobody (''). The prefixes keep a
 * user id that looks like an email or a host apart from the real ones. Events of /v1/events, bulk
 * and CSV have no userId/anonymousId and are keyed by email or domain as always.
 */
export function identityOf(record: EventRecord): string {
  if (record.userId !== undefined) return `u:${record.userId}`;
  if (record.anonymousId !== undefined) return `a:${record.anonymousId}`;
  return record.email ?? record.domain ?? '';
}

/** events.unique's key: a contact's (or a company's) events share a partition, in order. */
export function identityKey(accountId: string, identity: string): string {
  return `${accountId}:${identity}`;
}

/** events.unique's key of a record (identityKey of its account and identityOf). */
export function uniqueEventKey(record: EventRecord): string {
  return identityKey(record.accountId, identityOf(record));
}
