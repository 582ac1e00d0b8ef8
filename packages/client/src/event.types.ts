/**
 * The event a producer sends: the API's `IngestEvent` (schemas/src/ingest-event.ts). Written out
 * here rather than derived with TypeBox's `Static`, so the published declarations stand alone
 * (no private workspace package in them); `event.types.test.ts` fails type-checking the day the
 * two differ.
 */
export interface TrackEvent {
  /** What happened, e.g. "Signed Up". 1 to 255 characters. */
  eventName: string;
  /** Contact identity. At least one of email or domain. */
  email?: string;
  /** Company identity: a bare host name. At least one of email or domain. */
  domain?: string;
  /** ISO 8601 date-time with Z or an offset; at most 24 h ahead. Default: time of receipt. */
  timestamp?: string;
  /** Your id for deduplication; the client sets a UUIDv7 when you leave it out, so retries are safe. */
  eventId?: string;
  /** At most 50 keys of 1 to 255 characters; values are any JSON. */
  properties?: Record<string, unknown>;
}

/** An event as the client queues and sends it: the id is always set. */
export type QueuedEvent = TrackEvent & { eventId: string };
