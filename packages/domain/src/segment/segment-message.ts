import { EARLIEST_RECORD_TIME_MS, LATEST_RECORD_TIME_MS, MAX_PERSON_ID_LENGTH } from '@ingest/schemas';
import { normalizeDomain, normalizeEmail } from '../events/identity.js';
import { parseTimestamp } from '../events/timestamp.js';

/**
 * The Segment (and RudderStack) message → our event, in one place (docs/segment.md has the same
 * table for users). Pure: no I/O, the receive time is given. What it returns is checked again by
 * the event validator (lengths, property limits, the future bound), exactly like a /v1/events
 * event, so the two intakes share one set of rules.
 */
export const SEGMENT_TYPES = ['track', 'identify', 'group', 'page', 'screen', 'alias'] as const;
export type SegmentType = (typeof SEGMENT_TYPES)[number];

/** The event names of the calls that carry none of their own (a `track` keeps its `event`). */
export const SEGMENT_EVENT_NAMES: Readonly<Record<Exclude<SegmentType, 'track'>, string>> = {
  identify: '$identify',
  group: '$group',
  page: '$page',
  screen: '$screen',
  alias: '$alias',
};

/** Segment's own limits: a message over 32 KB is refused alone, a batch over 500 KB whole. */
export const MAX_SEGMENT_MESSAGE_BYTES = 32 * 1024;
export const MAX_SEGMENT_BATCH_BYTES = 500 * 1024;

/** What the event validator checks: the fields of a /v1/events event. */
export interface SegmentEventInput {
  eventId?: string;
  eventName: string;
  email?: string;
  domain?: string;
  timestamp: string;
  properties: Record<string, unknown>;
}

export interface SegmentMapped {
  event: SegmentEventInput;
  userId?: string;
  anonymousId?: string;
  context?: Record<string, unknown>;
  /** The time the sender claimed, before the clock-skew correction; absent when it sent none (or one outside what a record holds). */
  originalTimestampMs?: number;
}

export interface SegmentMappingError {
  /** JSON Pointer relative to the message, e.g. `/userId`. */
  field: string;
  code: string;
  message: string;
}

export type SegmentMapping = { ok: true; mapped: SegmentMapped } | { ok: false; messageId?: string; error: SegmentMappingError };

export interface SegmentMessageOptions {
  /** The call's type when the route names it (/v1/track, /v1/t, ...); a batch's messages carry their own `type`. */
  type?: SegmentType;
  receivedAtMs: number;
  /** A batch's own `sentAt` and `context`: a message's own win. */
  batchSentAt?: unknown;
  batchContext?: unknown;
}

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const fail = (messageId: string | undefined, field: string, code: string, message: string): SegmentMapping => ({
  ok: false,
  ...(messageId !== undefined ? { messageId } : {}),
  error: { field, code, message },
});

/** The JSON size of a message as it counts against MAX_SEGMENT_MESSAGE_BYTES. */
export function segmentMessageBytes(message: unknown): number {
  return Buffer.byteLength(JSON.stringify(message) ?? '', 'utf8');
}

export function mapSegmentMessage(input: unknown, options: SegmentMessageOptions): SegmentMapping {
  if (!isObject(input)) return fail(undefined, '', 'invalid_type', 'each message must be a JSON object');
  const messageId = idOf(input.messageId);

  const type = options.type ?? input.type;
  if (typeof type !== 'string' || !(SEGMENT_TYPES as readonly string[]).includes(type)) {
    return fail(messageId, '/type', 'unknown_type', `type must be one of ${SEGMENT_TYPES.join(', ')}`);
  }

  const userId = idOf(input.userId);
  const anonymousId = idOf(input.anonymousId);
  for (const [field, value] of [
    ['userId', userId],
    ['anonymousId', anonymousId],
  ] as const) {
    if (value !== undefined && value.length > MAX_PERSON_ID_LENGTH)
      return fail(messageId, `/${field}`, 'too_long', `is longer than ${MAX_PERSON_ID_LENGTH} characters`);
  }
  if (userId === undefined && anonymousId === undefined) return fail(messageId, '/userId', 'required', 'a message needs a userId or an anonymousId');

  const time = timesOf(input, options);
  if (!time.ok) return fail(messageId, time.field, 'invalid_format', time.message);

  const shaped = shapeOf(type as SegmentType, input);
  if (!shaped.ok) return fail(messageId, shaped.field, shaped.code, shaped.message);

  const context = contextOf(input.context, options.batchContext);
  return {
    ok: true,
    mapped: {
      event: {
        ...(messageId !== undefined ? { eventId: messageId } : {}),
        eventName: shaped.eventName,
        ...(shaped.email !== undefined ? { email: shaped.email } : {}),
        ...(shaped.domain !== undefined ? { domain: shaped.domain } : {}),
        timestamp: new Date(time.timestampMs).toISOString(),
        properties: shaped.properties,
      },
      ...(userId !== undefined ? { userId } : {}),
      ...(anonymousId !== undefined ? { anonymousId } : {}),
      ...(context !== undefined ? { context } : {}),
      ...(time.originalMs !== undefined && time.originalMs >= EARLIEST_RECORD_TIME_MS && time.originalMs <= LATEST_RECORD_TIME_MS
        ? { originalTimestampMs: time.originalMs }
        : {}),
    },
  };
}

/** Segment sends ids as strings; some SDKs let a number through. Empty means absent. */
function idOf(value: unknown): string | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return typeof value === 'string' && value.length > 0 ? value : undefined;
}

type Times = { ok: true; timestampMs: number; originalMs?: number } | { ok: false; field: string; message: string };

/**
 * Segment's clock-skew rule: a device's clock may be wrong, but the gap between when it says the
 * call happened (`timestamp`, kept as `originalTimestamp`) and when it says it sent it (`sentAt`)
 * is right, so the event time is `receivedAt - (sentAt - originalTimestamp)`. Without `sentAt`
 * the claimed time stands; without a claimed time the receive time is the event time.
 */
function timesOf(input: Json, options: SegmentMessageOptions): Times {
  const claimedField = input.timestamp !== undefined ? 'timestamp' : 'originalTimestamp';
  const claimed = parseTime(input[claimedField]);
  if (claimed === 'invalid') return { ok: false, field: `/${claimedField}`, message: 'must be an ISO 8601 date-time with a zone' };
  const ownSentAt = input.sentAt !== undefined;
  const sentAt = parseTime(ownSentAt ? input.sentAt : options.batchSentAt);
  if (sentAt === 'invalid') {
    return { ok: false, field: '/sentAt', message: `${ownSentAt ? '' : "(the batch's) "}must be an ISO 8601 date-time with a zone` };
  }
  if (claimed === undefined) return { ok: true, timestampMs: options.receivedAtMs };
  const timestampMs = sentAt === undefined ? claimed : options.receivedAtMs - (sentAt - claimed);
  // Date covers ±8.64e15 ms; beyond it the validator could not even print the time.
  if (!Number.isFinite(timestampMs) || Math.abs(timestampMs) > 8.64e15) return { ok: false, field: '/sentAt', message: 'is too far from timestamp' };
  return { ok: true, timestampMs, originalMs: claimed };
}

function parseTime(value: unknown): number | undefined | 'invalid' {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return 'invalid';
  const t = parseTimestamp(value);
  return t.ok ? t.ms : 'invalid';
}

type Shape = { ok: true; eventName: string; properties: Json; email?: string; domain?: string } | { ok: false; field: string; code: string; message: string };

type Field = { value: Json } | { error: Shape };

function objectField(input: Json, field: string): Field {
  const value = input[field];
  if (value === undefined || value === null) return { value: {} };
  if (!isObject(value)) return { error: { ok: false, field: `/${field}`, code: 'invalid_type', message: 'must be an object' } };
  return { value };
}

/** The event name, the properties and what the call says about whom (email, domain), per type. */
function shapeOf(type: SegmentType, input: Json): Shape {
  switch (type) {
    case 'track': {
      if (typeof input.event !== 'string') return { ok: false, field: '/event', code: 'required', message: 'a track call needs an event name' };
      const properties = objectField(input, 'properties');
      if ('error' in properties) return properties.error;
      return { ok: true, eventName: input.event, properties: properties.value };
    }
    case 'page':
    case 'screen': {
      const properties = objectField(input, 'properties');
      if ('error' in properties) return properties.error;
      // The page's name and category live beside its properties in Segment's spec.
      const extra: Json = {};
      for (const key of ['name', 'category'] as const) if (typeof input[key] === 'string' && !(key in properties.value)) extra[key] = input[key];
      return { ok: true, eventName: SEGMENT_EVENT_NAMES[type], properties: { ...properties.value, ...extra } };
    }
    case 'identify': {
      const traits = objectField(input, 'traits');
      if ('error' in traits) return traits.error;
      const email = typeof traits.value.email === 'string' ? normalizeEmail(traits.value.email) : undefined;
      // A malformed traits.email does not refuse the call: it stays a trait, the event has no email.
      return { ok: true, eventName: SEGMENT_EVENT_NAMES.identify, properties: traits.value, ...(email?.ok ? { email: email.value } : {}) };
    }
    case 'group': {
      const fields = objectField(input, 'traits');
      if ('error' in fields) return fields.error;
      const traits = fields.value;
      const groupId = idOf(input.groupId);
      if (groupId === undefined) return { ok: false, field: '/groupId', code: 'required', message: 'a group call needs a groupId' };
      const domain = domainOf(traits);
      return {
        ok: true,
        eventName: SEGMENT_EVENT_NAMES.group,
        properties: 'groupId' in traits ? traits : { ...traits, groupId },
        ...(domain !== undefined ? { domain } : {}),
      };
    }
    case 'alias': {
      const previousId = idOf(input.previousId);
      if (previousId === undefined) return { ok: false, field: '/previousId', code: 'required', message: 'an alias call needs a previousId' };
      return { ok: true, eventName: SEGMENT_EVENT_NAMES.alias, properties: { previousId } };
    }
  }
}

/** A group's company: `traits.domain`, else the host of `traits.website` (without `www.`). */
function domainOf(traits: Json): string | undefined {
  if (typeof traits.domain === 'string') {
    const d = normalizeDomain(traits.domain);
    if (d.ok) return d.value;
  }
  if (typeof traits.website !== 'string') return undefined;
  let host = traits.website.trim();
  try {
    host = new URL(host.includes('://') ? host : `https://${host}`).hostname;
  } catch {
    return undefined;
  }
  const d = normalizeDomain(host.replace(/^www\./i, ''));
  return d.ok ? d.value : undefined;
}

/** The message's context over the batch's (shallow: a message's key wins); not an object: none. */
function contextOf(own: unknown, batch: unknown): Json | undefined {
  const merged = { ...(isObject(batch) ? batch : {}), ...(isObject(own) ? own : {}) };
  return Object.keys(merged).length > 0 ? merged : undefined;
}
