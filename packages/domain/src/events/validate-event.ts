import { type EventRecord, FORBIDDEN_PROPERTY_KEYS, IngestEvent, compileValidator } from '@ingest/schemas';
import type { ErrorObject } from 'ajv';
import { v7 as uuidv7 } from 'uuid';
import { normalizeDomain, normalizeEmail } from './identity.js';
import { parseTimestamp } from './timestamp.js';

/**
 * The one set of rules for an event, used by the gateway for POST /v1/events and by the job
 * runner for each bulk and CSV event. Pure: no I/O; time and id generation are injected.
 */
export interface EventFieldError {
  /** JSON Pointer relative to the event, e.g. `/email`. */
  field: string;
  code: string;
  message: string;
}

export interface NormalizedEvent {
  eventId: string;
  eventName: string;
  email: string | null;
  domain: string | null;
  timestampMs: number;
  properties: Record<string, unknown>;
  /** True when the service made the id up (the caller sent none). */
  generatedId: boolean;
}

export type EventCheck = { ok: true; event: NormalizedEvent } | { ok: false; eventId?: string; errors: EventFieldError[] };

export interface EventValidatorOptions {
  /** Events further in the future than this are refused (clock skew allowance). */
  maxFutureMs?: number;
  /** Nesting depth allowed inside property values. */
  maxPropertyDepth?: number;
  generateId?: () => string;
  /**
   * Whether an event needs an email or a domain (default true). The Segment-compatible intake
   * turns it off: its messages name their person by userId/anonymousId, which it checks itself.
   */
  requireContact?: boolean;
}

const KEYWORD_CODES: Record<string, string> = {
  required: 'required',
  type: 'invalid_type',
  maxLength: 'too_long',
  minLength: 'too_short',
  maxProperties: 'too_many_keys',
  additionalProperties: 'unknown_field',
  pattern: 'invalid_format',
};

// DateTime columns start at 1970 (and ClickHouse 18.16 has no DateTime64).
const EARLIEST_MS = 0;

export function createEventValidator(options: EventValidatorOptions = {}): (input: unknown, receivedAtMs: number) => EventCheck {
  const maxFutureMs = options.maxFutureMs ?? 24 * 60 * 60 * 1000;
  const maxDepth = options.maxPropertyDepth ?? 16;
  const generateId = options.generateId ?? uuidv7;
  const requireContact = options.requireContact ?? true;
  const validateShape = compileValidator<IngestEvent>(IngestEvent, 'all');

  return (input, receivedAtMs) => {
    if (typeof input !== 'object' || input === null || Array.isArray(input)) {
      return { ok: false, errors: [{ field: '', code: 'invalid_type', message: 'each event must be a JSON object' }] };
    }
    const suppliedId = typeof (input as { eventId?: unknown }).eventId === 'string' ? (input as { eventId: string }).eventId : undefined;
    const errors: EventFieldError[] = [];
    if (!validateShape(input)) {
      // Errors about a property *name* come twice (the inner keyword and propertyNames); keep the latter.
      errors.push(...(validateShape.errors ?? []).filter((e) => e.propertyName === undefined).map(toFieldError));
      return { ok: false, ...(suppliedId ? { eventId: suppliedId } : {}), errors: firstErrorPerField(errors) };
    }
    const event = input;

    let email: string | null = null;
    let domain: string | null = null;
    if (requireContact && event.email === undefined && event.domain === undefined) {
      errors.push({ field: '/email', code: 'required', message: 'at least one of email or domain is required' });
    }
    if (event.email !== undefined) {
      const r = normalizeEmail(event.email);
      if (r.ok) email = r.value;
      else errors.push({ field: '/email', code: 'invalid_format', message: r.message });
    }
    if (event.domain !== undefined) {
      const r = normalizeDomain(event.domain);
      if (r.ok) domain = r.value;
      else errors.push({ field: '/domain', code: 'invalid_format', message: r.message });
    }

    let timestampMs = receivedAtMs;
    if (event.timestamp !== undefined) {
      const t = parseTimestamp(event.timestamp);
      if (!t.ok) errors.push({ field: '/timestamp', code: 'invalid_format', message: t.message });
      else if (t.ms > receivedAtMs + maxFutureMs) {
        errors.push({ field: '/timestamp', code: 'in_future', message: `is more than ${Math.round(maxFutureMs / 3_600_000)} h in the future` });
      } else if (t.ms < EARLIEST_MS) errors.push({ field: '/timestamp', code: 'out_of_range', message: 'must be 1970-01-01 or later' });
      else timestampMs = t.ms;
    }

    const properties = event.properties ?? {};
    for (const key of Object.keys(properties)) {
      if ((FORBIDDEN_PROPERTY_KEYS as readonly string[]).includes(key)) {
        errors.push({ field: `/properties/${escapePointer(key)}`, code: 'forbidden_key', message: `the key "${key}" is not allowed` });
      } else if (depthOf(properties[key], maxDepth + 1) > maxDepth) {
        errors.push({ field: `/properties/${escapePointer(key)}`, code: 'too_deep', message: `nests deeper than ${maxDepth} levels` });
      }
    }
    if (event.eventName.trim().length === 0) errors.push({ field: '/eventName', code: 'required', message: 'must not be blank' });
    else if (!event.eventName.isWellFormed()) errors.push({ field: '/eventName', code: 'invalid_unicode', message: 'contains an unpaired UTF-16 surrogate' });

    if (errors.length > 0) return { ok: false, ...(suppliedId ? { eventId: suppliedId } : {}), errors };
    return {
      ok: true,
      event: {
        eventId: event.eventId ?? generateId(),
        eventName: event.eventName,
        email,
        domain,
        timestampMs,
        properties,
        generatedId: event.eventId === undefined,
      },
    };
  };
}

function toFieldError(e: ErrorObject): EventFieldError {
  if (e.keyword === 'propertyNames') {
    const key = String(e.params.propertyName);
    return {
      field: `${e.instancePath}/${escapePointer(key)}`,
      code: key.length === 0 ? 'too_short' : 'too_long',
      message: 'property keys must be 1 to 255 characters',
    };
  }
  let field = e.instancePath;
  if (e.keyword === 'required') field += `/${escapePointer(String(e.params.missingProperty))}`;
  if (e.keyword === 'additionalProperties') field += `/${escapePointer(String(e.params.additionalProperty))}`;
  const message = e.keyword === 'additionalProperties' ? 'is not a known field' : (e.message ?? 'is invalid');
  return { field, code: KEYWORD_CODES[e.keyword] ?? 'invalid', message };
}

/** One error per field, the first found (e.g. an empty eventId is too short, not also misformatted). */
function firstErrorPerField(errors: EventFieldError[]): EventFieldError[] {
  const seen = new Set<string>();
  return errors.filter((e) => {
    if (seen.has(e.field)) return false;
    seen.add(e.field);
    return true;
  });
}

/** RFC 6901: `~` and `/` inside a key. */
export function escapePointer(key: string): string {
  return key.replace(/~/g, '~0').replace(/\//g, '~1');
}

/** Depth of a JSON value, stopping early once `limit` is exceeded. */
function depthOf(value: unknown, limit: number): number {
  if (typeof value !== 'object' || value === null) return 0;
  if (limit <= 0) return 1;
  let max = 0;
  for (const child of Array.isArray(value) ? value : Object.values(value)) {
    max = Math.max(max, depthOf(child, limit - 1));
    if (max >= limit) break;
  }
  return 1 + max;
}

/**
 * The wire record of an accepted event. Built field by field: the record's schema refuses
 * unknown fields, so nothing of the validator's own output (such as `generatedId`) may leak in.
 */
export function toEventRecord(
  event: NormalizedEvent,
  meta: { accountId: string; receivedAtMs: number; source: EventRecord['source']; jobId: string | null },
): EventRecord {
  return {
    v: 1,
    accountId: meta.accountId,
    eventId: event.eventId,
    eventName: event.eventName,
    email: event.email,
    domain: event.domain,
    timestampMs: event.timestampMs,
    receivedAtMs: meta.receivedAtMs,
    properties: event.properties,
    source: meta.source,
    jobId: meta.jobId,
  };
}
