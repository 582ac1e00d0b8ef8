import { type Static, type TSchema, Type } from '@sinclair/typebox';

/**
 * The public request shapes of the ingestion API (spec sections 2.1, 4.1, 4.2). These schemas
 * are declared on the routes (so they are the OpenAPI document) and validate each event.
 * Rules a JSON Schema cannot say well (identity normalisation, calendar dates, future
 * timestamps) live in the event validator of the shared library and are documented here.
 */
export const MAX_PROPERTIES = 50;
export const MAX_EVENTS_PER_REQUEST = 100;
export const MAX_EVENTS_PER_BULK = 10_000;
export const FORBIDDEN_PROPERTY_KEYS = ['__proto__', 'constructor', 'prototype'] as const;

/**
 * Every `errors[]` of the API (a 400, a partly accepted 202, a CSV header, a job's status) lists
 * at most this many entries, so an answer's size never grows with what the caller sent; when
 * more were found, `errorsTotal` says how many and `errorsTruncated` is true.
 */
export const MAX_ERRORS_LISTED = 100;

/** The two members that go with a bounded `errors[]`: present only when the list was cut. */
export const ErrorsBound = {
  errorsTotal: Type.Optional(
    Type.Integer({ minimum: 0, description: `How many errors were found; present only when errors[] lists the first ${MAX_ERRORS_LISTED} of them.` }),
  ),
  errorsTruncated: Type.Optional(
    Type.Literal(true, { description: `True when more than ${MAX_ERRORS_LISTED} errors were found and errors[] lists the first ones.` }),
  ),
};

export const IngestEvent = Type.Object(
  {
    eventName: Type.String({ minLength: 1, maxLength: 255, description: 'What happened, e.g. "Signed Up". At most 255 characters.' }),
    email: Type.Optional(
      Type.String({ maxLength: 254, description: 'Contact identity. Trimmed and lower-cased; must be a valid address. At least one of email or domain.' }),
    ),
    domain: Type.Optional(
      Type.String({
        maxLength: 253,
        description: 'Company identity: a bare host name (no scheme, path or port), lower-cased. At least one of email or domain.',
      }),
    ),
    timestamp: Type.Optional(
      Type.String({
        maxLength: 64,
        description: 'ISO 8601 date-time with Z or an offset, stored in UTC with millisecond precision. At most 24 h in the future. Default: time of receipt.',
        examples: ['2026-11-21T14:03:07.123Z'],
      }),
    ),
    eventId: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 255,
        pattern: '^[\\x21-\\x7E]+$',
        description: 'Your id for deduplication: a repeat within 7 days has no further effect. Printable ASCII, no spaces. Generated (UUIDv7) when omitted.',
      }),
    ),
    properties: Type.Optional(
      // Type.Record would drop the key constraints, so the JSON Schema is spelled out.
      Type.Unsafe<Record<string, unknown>>({
        type: 'object',
        maxProperties: MAX_PROPERTIES,
        propertyNames: { minLength: 1, maxLength: 255 },
        additionalProperties: true,
        description: 'At most 50 keys of 1 to 255 characters; values are any JSON. Keys __proto__, constructor and prototype are refused.',
      }),
    ),
  },
  { $id: 'IngestEvent', additionalProperties: false, description: 'A product-usage event by a contact (email) and/or a company (domain).' },
);
export type IngestEvent = Static<typeof IngestEvent>;

/**
 * Request bodies. The documented shape (`EventsRequest`, `BulkEventsRequest`: arrays of
 * IngestEvent) is what OpenAPI shows; the gateway validates the request with the envelope only
 * (`*Envelope`: arrays of anything) and then each event on its own, so one bad event is
 * rejected alone instead of failing the whole request.
 */
const eventsArray = (items: TSchema, maxItems: number, description: string) => Type.Array(items, { minItems: 1, maxItems, description });

export const EventsRequest = Type.Object({ events: eventsArray(IngestEvent, MAX_EVENTS_PER_REQUEST, '1 to 100 events.') }, { additionalProperties: false });
export const EventsEnvelope = Type.Object({ events: eventsArray(Type.Unknown(), MAX_EVENTS_PER_REQUEST, '1 to 100 events.') }, { additionalProperties: false });

export const BulkEventsRequest = Type.Object({ events: eventsArray(IngestEvent, MAX_EVENTS_PER_BULK, '1 to 10,000 events.') }, { additionalProperties: false });
export const BulkEventsEnvelope = Type.Object(
  { events: eventsArray(Type.Unknown(), MAX_EVENTS_PER_BULK, '1 to 10,000 events.') },
  { additionalProperties: false },
);

export const FieldErrorSchema = Type.Object(
  {
    index: Type.Optional(Type.Integer({ description: 'Position of the event in the request (0-based).' })),
    eventId: Type.Optional(Type.String()),
    field: Type.Optional(Type.String({ description: 'JSON Pointer into the request, e.g. /events/3/email.' })),
    row: Type.Optional(Type.Integer({ description: 'CSV: 1-based row, the header is row 1.' })),
    column: Type.Optional(Type.String()),
    code: Type.String({ description: 'Stable machine word: required, too_long, invalid_format, quota_exceeded, ...' }),
    message: Type.String(),
  },
  { $id: 'FieldError' },
);

export const EventsReceipt = Type.Object(
  {
    accepted: Type.Integer({ minimum: 0 }),
    rejected: Type.Integer({ minimum: 0 }),
    requestId: Type.String(),
    eventIds: Type.Array(Type.String(), { description: 'Ids of the accepted events, in request order.' }),
    errors: Type.Optional(Type.Array(FieldErrorSchema, { maxItems: MAX_ERRORS_LISTED, description: 'Why events were rejected (the first 100 errors).' })),
    ...ErrorsBound,
  },
  { $id: 'EventsReceipt' },
);
export type EventsReceipt = Static<typeof EventsReceipt>;

export const BulkJobReceipt = Type.Object(
  {
    jobId: Type.String(),
    totalEvents: Type.Integer({ minimum: 0 }),
    status: Type.Literal('queued'),
  },
  { $id: 'BulkJobReceipt' },
);
export type BulkJobReceipt = Static<typeof BulkJobReceipt>;

export const ProblemDetails = Type.Object(
  {
    type: Type.String(),
    title: Type.String(),
    status: Type.Integer(),
    detail: Type.String(),
    requestId: Type.String(),
    errors: Type.Optional(Type.Array(FieldErrorSchema, { maxItems: MAX_ERRORS_LISTED, description: 'What was wrong (the first 100 errors).' })),
    ...ErrorsBound,
  },
  { $id: 'ProblemDetails', additionalProperties: true, description: 'RFC 9457 problem details.' },
);

export const UsageResponse = Type.Object(
  {
    plan: Type.String(),
    limit: Type.Integer(),
    used: Type.Integer(),
    remaining: Type.Integer(),
    periodStart: Type.String({ description: 'Start of the month (UTC), inclusive.' }),
    periodEnd: Type.String({ description: 'Start of the next month (UTC): when the allowance resets.' }),
  },
  { $id: 'UsageResponse' },
);
export type UsageResponse = Static<typeof UsageResponse>;
