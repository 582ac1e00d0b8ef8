import { type Static, Type } from '@sinclair/typebox';

/**
 * An accepted event as it travels between services on Kafka (events.raw, events.unique).
 * It is already validated and normalised by whoever accepted it (gateway or job runner);
 * consumers still check it against this schema, because a message that does not match is a
 * poison message for the dead-letter topic, not a crash.
 *
 * `v` is the wire-format version: consumers dead-letter versions they do not know.
 */
export const EVENT_RECORD_VERSION = 1;

export const EventSource = Type.Union([Type.Literal('api'), Type.Literal('bulk'), Type.Literal('csv')]);

export const EventRecord = Type.Object(
  {
    v: Type.Literal(EVENT_RECORD_VERSION),
    accountId: Type.String({ minLength: 1, maxLength: 64 }),
    eventId: Type.String({ minLength: 1, maxLength: 255 }),
    eventName: Type.String({ minLength: 1, maxLength: 255 }),
    email: Type.Union([Type.String({ maxLength: 320 }), Type.Null()]),
    domain: Type.Union([Type.String({ maxLength: 253 }), Type.Null()]),
    /** Event time, epoch milliseconds (UTC). */
    timestampMs: Type.Integer(),
    /** When the service accepted it, epoch milliseconds. */
    receivedAtMs: Type.Integer(),
    properties: Type.Record(Type.String(), Type.Unknown()),
    source: EventSource,
    jobId: Type.Union([Type.String(), Type.Null()]),
  },
  { $id: 'EventRecord', additionalProperties: false },
);

export type EventRecord = Static<typeof EventRecord>;
export type EventSource = Static<typeof EventSource>;
