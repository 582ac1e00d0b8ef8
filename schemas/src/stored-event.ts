import { type Static, Type } from '@sinclair/typebox';
import { EventSource } from './event-record.js';
import { IngestEvent } from './ingest-event.js';

/**
 * `GET /v1/events/{eventId}`: an event as stored in ClickHouse, read back by its own account.
 *
 * An event becomes readable once the pipeline has stored it, normally a few seconds after the
 * 202: a 404 right after sending an event is normal, retry shortly.
 */
export const EventIdParams = Type.Object(
  {
    eventId: Type.String({
      // The same rule as IngestEvent.eventId: anything that could have been sent can be read.
      minLength: 1,
      maxLength: 255,
      pattern: IngestEvent.properties.eventId.pattern,
      description: 'The eventId given when sending the event, or the one generated and returned in `eventIds`. URL-encode it.',
    }),
  },
  { additionalProperties: false },
);
export type EventIdParams = Static<typeof EventIdParams>;

/**
 * CRM sync state of an event, as the crm-sink recorded it (kept 30 days by default):
 * `pending` (not handled yet, or its state expired), `synced` (its CRM effects are written),
 * `skipped` (nothing to do: `reason` says why) or `failed` (dead-lettered: `reason` is the CRM's
 * error; a replay may still sync it).
 */
export const EventSyncState = Type.Object(
  {
    state: Type.Union([Type.Literal('pending'), Type.Literal('synced'), Type.Literal('skipped'), Type.Literal('failed')], {
      description:
        '`pending`: not synced yet (or no state recorded); `synced`: the CRM has its effects; `skipped`: no CRM work for it (see `reason`); `failed`: the CRM refused it or retries ran out (see `reason`).',
    }),
    reason: Type.Optional(
      Type.String({
        description:
          'For `skipped`: `no_mapping`, `no_rule_matched`, `missing_identity` or `identity_unresolved` (a userId/anonymousId but no email or domain). For `failed`: the CRM’s error message.',
      }),
    ),
    updatedAt: Type.Optional(Type.String({ description: 'When the sync state was recorded, ISO 8601 in UTC.' })),
  },
  { additionalProperties: false },
);

export const StoredEvent = Type.Object(
  {
    eventId: Type.String(),
    eventName: Type.String(),
    email: Type.Union([Type.String(), Type.Null()], { description: 'Normalised (trimmed, lower-cased); null when the event had none.' }),
    domain: Type.Union([Type.String(), Type.Null()], { description: 'Lower-cased host name; null when the event had none.' }),
    timestamp: Type.String({ description: 'Event time, ISO 8601 in UTC with milliseconds.', examples: ['2026-11-21T14:03:07.123Z'] }),
    receivedAt: Type.String({ description: 'When the API accepted the event, ISO 8601 in UTC with milliseconds.' }),
    properties: Type.Unsafe<Record<string, unknown>>({ type: 'object', additionalProperties: true, description: 'The properties as sent.' }),
    source: EventSource,
    jobId: Type.Union([Type.String(), Type.Null()], { description: 'The bulk or CSV job that brought the event; null for POST /v1/events.' }),
    userId: Type.Optional(Type.String({ description: 'The Segment `userId` the event was sent with; absent when it had none.' })),
    anonymousId: Type.Optional(Type.String({ description: 'The Segment `anonymousId` the event was sent with; absent when it had none.' })),
    context: Type.Optional(
      Type.Unsafe<Record<string, unknown>>({
        type: 'object',
        additionalProperties: true,
        description: 'The Segment `context` as sent (ip, userAgent, page, campaign, library, ...); absent when it had none.',
      }),
    ),
    sync: EventSyncState,
  },
  {
    $id: 'StoredEvent',
    additionalProperties: false,
    description:
      'An event as stored. Readable once the pipeline has stored it, normally seconds after the 202; a 404 right after sending is normal, retry shortly.',
  },
);
export type StoredEvent = Static<typeof StoredEvent>;
