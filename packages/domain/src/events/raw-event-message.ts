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
    key: `${record.accountId}:${record.eventId}`,
    value: JSON.stringify(record),
    headers: { [IDENTITY_HEADER]: identityOf(record) },
  };
}

/** Whom an event is about: its email, else its domain, else nobody (''). */
export function identityOf(record: EventRecord): string {
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
