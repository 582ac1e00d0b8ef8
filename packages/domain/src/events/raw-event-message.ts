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
 * Whom an event is about: its email, else its domain, else its sender's user id (`u:<userId>`),
 * else its device id (`a:<anonymousId>`), else nobody (''). The prefixes keep a user id that looks
 * like an email or a host apart from the real ones; the last two come only from the
 * Segment-compatible intake (docs/segment.md), so every event of one person stays on one
 * events.unique partition, in order, even before we know the person's email.
 */
export function identityOf(record: EventRecord): string {
  const contact = record.email ?? record.domain;
  if (contact !== null) return contact;
  if (record.userId !== undefined) return `u:${record.userId}`;
  if (record.anonymousId !== undefined) return `a:${record.anonymousId}`;
  return '';
}

/** events.unique's key: a contact's (or a company's) events share a partition, in order. */
export function identityKey(accountId: string, identity: string): string {
  return `${accountId}:${identity}`;
}

/** events.unique's key of a record (identityKey of its account and identityOf). */
export function uniqueEventKey(record: EventRecord): string {
  return identityKey(record.accountId, identityOf(record));
}
