import { type Static, Type } from '@sinclair/typebox';

/**
 * An accepted event as it travels between services on Kafka (events.raw, events.unique).
 * It is already validated and normalised by whoever accepted it (gateway or job runner);
 * consumers still check it against this schema, because a message that does not match is a
 * poison message for the dead-letter topic, not a crash.
 *
 * `v` is the wire-format version: consumers dead-letter versions they do not know. The rule
 * for changing it (docs/architecture.md, "Wire contracts"): a new optional field keeps `v`, and
 * readers accept and ignore fields they do not know, so a reader one release behind takes a
 * newer writer's record during a rolling deploy; a change an older reader would misread (a field
 * removed, renamed, retyped, or one it must act on) is a new `v`, read by every reader before
 * any writer sends it.
 */
export const EVENT_RECORD_VERSION = 1;

/**
 * Times a record may carry: ClickHouse's DateTime columns hold 1970 to 2106, and a time outside
 * the range JavaScript dates cover made the writer throw on every retry (a poisoned partition).
 * The gateway never accepts such times (1970 or later, at most 24 h ahead); a record that holds
 * one anyway is dead-lettered by its consumers instead of retried for ever.
 */
export const EARLIEST_RECORD_TIME_MS = 0;
export const LATEST_RECORD_TIME_MS = Date.UTC(2100, 0, 1) - 1;
const RecordTimeMs = (description: string) => Type.Integer({ minimum: EARLIEST_RECORD_TIME_MS, maximum: LATEST_RECORD_TIME_MS, description });

/** Longest `userId` / `anonymousId` kept (Segment sets no limit; ours is the eventId's). */
export const MAX_PERSON_ID_LENGTH = 255;

export const EventSource = Type.Union([Type.Literal('api'), Type.Literal('bulk'), Type.Literal('csv')]);

export const EventRecord = Type.Object(
  {
    v: Type.Literal(EVENT_RECORD_VERSION),
    accountId: Type.String({ minLength: 1, maxLength: 64 }),
    eventId: Type.String({ minLength: 1, maxLength: 255 }),
    eventName: Type.String({ minLength: 1, maxLength: 255 }),
    email: Type.Union([Type.String({ maxLength: 320 }), Type.Null()]),
    domain: Type.Union([Type.String({ maxLength: 253 }), Type.Null()]),
    timestampMs: RecordTimeMs('Event time, epoch milliseconds (UTC), 1970 to 2099.'),
    receivedAtMs: RecordTimeMs('When the service accepted it, epoch milliseconds, 1970 to 2099.'),
    properties: Type.Record(Type.String(), Type.Unknown()),
    source: EventSource,
    jobId: Type.Union([Type.String(), Type.Null()]),
    // Optional, same `v` (a reader one release behind ignores them): set by the Segment-compatible
    // intake (docs/segment.md); absent on events sent to /v1/events, bulk and CSV.
    userId: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_PERSON_ID_LENGTH, description: "The sender's own user id (Segment `userId`)." })),
    anonymousId: Type.Optional(
      Type.String({ minLength: 1, maxLength: MAX_PERSON_ID_LENGTH, description: 'The device or browser id (Segment `anonymousId`).' }),
    ),
    context: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), { description: 'Segment `context` as sent (ip, userAgent, page, campaign, library, ...).' }),
    ),
    originalTimestampMs: Type.Optional(RecordTimeMs('The time the sender claimed (Segment `originalTimestamp`) before the clock-skew correction.')),
    // Optional, same `v`: `map` when the email/domain came from the per-account identity map
    // (docs/segment.md) rather than from the message itself.
    identitySource: Type.Optional(Type.String({ maxLength: 32, description: 'Where the email/domain came from when not sent: `map` (the identity map).' })),
  },
  // Open: the optional fields a newer writer adds are ignored, not dead-lettered.
  { $id: 'EventRecord' },
);

export type EventRecord = Static<typeof EventRecord>;
export type EventSource = Static<typeof EventSource>;
