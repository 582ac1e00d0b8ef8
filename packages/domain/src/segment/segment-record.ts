import type { EventRecord } from '@ingest/schemas';
import { DEAD_LETTER_HEADERS, type OutgoingMessage } from '@ingest/platform';
import { type NormalizedEvent, toEventRecord } from '../events/validate-event.js';
import type { SegmentMapped } from './segment-message.js';

/**
 * The wire record of an accepted Segment message: a /v1/events record plus the optional fields
 * only this intake sets (`userId`, `anonymousId`, `context`, `originalTimestampMs`; same `v`,
 * see schemas/src/event-record.ts). Built field by field, like toEventRecord.
 */
export function toSegmentEventRecord(event: NormalizedEvent, mapped: SegmentMapped, meta: { accountId: string; receivedAtMs: number }): EventRecord {
  return {
    ...toEventRecord(event, { accountId: meta.accountId, receivedAtMs: meta.receivedAtMs, source: 'api', jobId: null }),
    ...(mapped.userId !== undefined ? { userId: mapped.userId } : {}),
    ...(mapped.anonymousId !== undefined ? { anonymousId: mapped.anonymousId } : {}),
    ...(mapped.context !== undefined ? { context: mapped.context } : {}),
    ...(mapped.originalTimestampMs !== undefined ? { originalTimestampMs: mapped.originalTimestampMs } : {}),
  };
}

/** Set on the intake's dead letters: the route that refused the message (e.g. `/v1/batch`). */
export const DEAD_LETTER_ROUTE_HEADER = 'dlq-route';

export interface RefusedMessage {
  accountId: string;
  /** As sent (before any publishable-key namespace), when it had one. */
  messageId?: string;
  route: string;
  code: string;
  reason: string;
  /** The message as parsed from the request; stored as its JSON. */
  message: unknown;
  atMs: number;
}

/**
 * Segment's SDKs never read an answer's per-message errors, so a message the intake refuses is
 * written to the dead-letter topic (events.deadletter), where `ingest deadletters list` and the
 * dashboard show it with its reason. Keyed `accountId:messageId` (the dashboard's account filter
 * reads the key), value the message as sent. It has no `dlq-source-topic`: it never reached a
 * topic, and a replay refuses it (it is not an event record; send it again instead).
 */
export function segmentDeadLetter(refused: RefusedMessage): OutgoingMessage {
  return {
    key: `${refused.accountId}:${refused.messageId ?? ''}`,
    value: JSON.stringify(refused.message) ?? 'null',
    headers: {
      [DEAD_LETTER_HEADERS.code]: refused.code,
      [DEAD_LETTER_HEADERS.reason]: refused.reason.slice(0, 1_000),
      [DEAD_LETTER_HEADERS.failedAt]: new Date(refused.atMs).toISOString(),
      [DEAD_LETTER_HEADERS.consumer]: 'gateway',
      [DEAD_LETTER_ROUTE_HEADER]: refused.route,
    },
  };
}
