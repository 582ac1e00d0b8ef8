import type { Account } from '../control-plane/types.js';

/**
 * The namespace of eventIds sent through publishable keys.
 *
 * A publishable key sits in web pages, so anyone can copy it. If its eventIds shared the secret
 * keys' dedupe space, whoever copied it could send an id first that the account's own server
 * sends later, and the server's event would be dropped as a repeat. So, by default, an id a
 * caller supplies through a publishable key is stored as `pk:` + the id: dedupe, the seen-id
 * memory, the events table, the exact counts and the CRM all see `pk:abc`, a different event
 * from the secret key's `abc`. The prefix is part of the stored id (not a column of its own)
 * because the events table's sorting key and the metering (uniqExact of event_id) identify an
 * event by its id: two events with one stored id would be merged and counted once.
 *
 * The receipt answers the id the caller sent; `GET /v1/events/{id}` finds `abc` first and then
 * `pk:abc`, and the stored event's `eventId` says which one it is. Generated ids (no eventId
 * sent) are UUIDv7s that nobody can claim first: they are not prefixed. An account whose browser
 * and server send the same ids on purpose sets `publishableEventIds: shared`.
 */
export const PUBLISHABLE_ID_PREFIX = 'pk:';
/** A caller's eventId in the publishable namespace is at most this long, so the stored id stays within the record's 255. */
export const MAX_PUBLISHABLE_EVENT_ID_LENGTH = 255 - PUBLISHABLE_ID_PREFIX.length;

/** Whether ids sent through this account's publishable keys get the `pk:` namespace. */
export function separatesPublishableIds(account: Pick<Account, 'publishableEventIds'>): boolean {
  return account.publishableEventIds !== 'shared';
}

/** The id an event is stored, deduplicated and counted under: `pk:` + the caller's id in the publishable namespace. */
export function namespacedEventId(eventId: string, namespaced: boolean): string {
  return namespaced ? `${PUBLISHABLE_ID_PREFIX}${eventId}` : eventId;
}

/** The stored ids `GET /v1/events/{id}` looks for, in order: the id itself, then its publishable twin. */
export function readBackCandidates(eventId: string): string[] {
  const twin = `${PUBLISHABLE_ID_PREFIX}${eventId}`;
  return twin.length <= 255 ? [eventId, twin] : [eventId];
}
