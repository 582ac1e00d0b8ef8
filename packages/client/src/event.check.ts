import { FORBIDDEN_PROPERTY_KEYS, IngestEvent, MAX_PROPERTIES } from '@ingest/schemas/ingest-event';
import type { FieldError } from './errors.js';

/**
 * The API's rules for one event, checked before anything is queued, so a bad event is refused
 * at the call that made it, with the codes and fields the API would answer (`/email`
 * `invalid_format`, ...). The limits are read from the API's schema (`IngestEvent`), so a change
 * of contract is one edit there. Ajv and the gateway's validator stay out of the SDK (Ajv compiles
 * with `new Function`, which a strict Content-Security-Policy forbids, and weighs more than the
 * rest of the SDK together); `event.check.parity.test.ts` holds this file to the gateway's
 * validator on thousands of generated events.
 *
 * One deliberate difference: host names with non-ASCII characters are left to the API (turning
 * them into punycode needs the platform's IDNA tables); the API then rejects such an event alone
 * and the client reports it as a per-event rejection. Everything this check refuses, the API
 * refuses with the same code.
 */
type Shape = { maxLength?: number; minLength?: number };
const FIELDS = IngestEvent.properties as unknown as Record<keyof typeof IngestEvent.properties, Shape>;
const KNOWN_FIELDS = new Set(Object.keys(FIELDS));
const KEY_LIMIT = (IngestEvent.properties.properties as unknown as { propertyNames: Shape }).propertyNames;
const MAX_DEPTH = 16;
const MAX_FUTURE_MS = 24 * 60 * 60 * 1000;
const EVENT_ID = /^[\x21-\x7E]+$/;

// The same host-name and address rules as the API's (packages/domain/src/events/identity.ts),
// applied to ASCII input only (see above).
const LABEL = '(?!-)[a-z0-9-]{1,63}(?<!-)';
const HOSTNAME = new RegExp(`^(?=.{1,253}$)${LABEL}(\\.${LABEL})+$`);
const TOP_LEVEL = /\.(?:xn--[a-z0-9-]+|[a-z]{2,63})$/;
const LOCAL_PART = /^[^\s@"(),:;<>[\\\]\x00-\x1f\x7f]{1,64}$/;
const ASCII = /^[\x00-\x7f]*$/;
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})$/;

/** Length in code points, as JSON Schema (and so the API) counts it. */
function codePoints(s: string, atLeast: number): number {
  // A string of n UTF-16 units has at most n code points: count only when it could matter.
  if (s.length <= atLeast) return s.length;
  let n = 0;
  for (const _ of s) n++;
  return n;
}

function checkString(field: string, value: unknown, shape: Shape, errors: FieldError[]): value is string {
  if (typeof value !== 'string') {
    errors.push({ field: `/${field}`, code: 'invalid_type', message: 'must be string' });
    return false;
  }
  if (shape.maxLength !== undefined && codePoints(value, shape.maxLength) > shape.maxLength) {
    errors.push({ field: `/${field}`, code: 'too_long', message: `must NOT have more than ${shape.maxLength} characters` });
    return false;
  }
  if (shape.minLength !== undefined && codePoints(value, shape.minLength) < shape.minLength) {
    errors.push({ field: `/${field}`, code: 'too_short', message: `must NOT have fewer than ${shape.minLength} characters` });
    return false;
  }
  return true;
}

const escapePointer = (key: string) => key.replace(/~/g, '~0').replace(/\//g, '~1');

/** The errors of the event's shape: the JSON Schema's part of the rules. One per field. */
function shapeErrors(input: Record<string, unknown>): FieldError[] {
  const errors: FieldError[] = [];
  if (input.eventName === undefined) errors.push({ field: '/eventName', code: 'required', message: "must have required property 'eventName'" });
  for (const [key, value] of Object.entries(input)) {
    if (!KNOWN_FIELDS.has(key)) {
      errors.push({ field: `/${escapePointer(key)}`, code: 'unknown_field', message: 'is not a known field' });
      continue;
    }
    if (key === 'properties') {
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        errors.push({ field: '/properties', code: 'invalid_type', message: 'must be object' });
        continue;
      }
      const keys = Object.keys(value);
      if (keys.length > MAX_PROPERTIES)
        errors.push({ field: '/properties', code: 'too_many_keys', message: `must NOT have more than ${MAX_PROPERTIES} properties` });
      for (const k of keys) {
        const n = codePoints(k, KEY_LIMIT.maxLength ?? 255);
        if (n < (KEY_LIMIT.minLength ?? 1) || n > (KEY_LIMIT.maxLength ?? 255)) {
          errors.push({
            field: `/properties/${escapePointer(k)}`,
            code: n === 0 ? 'too_short' : 'too_long',
            message: 'property keys must be 1 to 255 characters',
          });
        }
      }
      continue;
    }
    const shape = FIELDS[key as keyof typeof FIELDS];
    if (checkString(key, value, shape, errors) && key === 'eventId' && !EVENT_ID.test(value)) {
      errors.push({ field: '/eventId', code: 'invalid_format', message: 'must be printable ASCII without spaces' });
    }
  }
  return errors;
}

function hostNameError(host: string): string | undefined {
  const trimmed = host.trim().toLowerCase().replace(/\.$/, '');
  if (/[/:@?#\s]/.test(trimmed)) return 'must be a bare host name such as "example.com" (no scheme, path, port or spaces)';
  if (ASCII.test(trimmed) && (!HOSTNAME.test(trimmed) || !TOP_LEVEL.test(trimmed))) return 'must be a host name such as "example.com"';
  return undefined;
}

function emailError(email: string): string | undefined {
  const trimmed = email.trim().toLowerCase();
  if (!trimmed.isWellFormed()) return 'contains an unpaired UTF-16 surrogate';
  const at = trimmed.lastIndexOf('@');
  const local = trimmed.slice(0, at);
  const bad = 'must be an email address such as "ada@example.com"';
  if (at <= 0 || trimmed.indexOf('@') !== at) return bad;
  if (!LOCAL_PART.test(local) || local.startsWith('.') || local.endsWith('.') || local.includes('..')) return bad;
  return hostNameError(trimmed.slice(at + 1)) === undefined ? undefined : bad;
}

/** Milliseconds of an ISO 8601 date-time with a zone, or undefined when it is none (or no real date). */
export function timestampMs(input: string): number | undefined {
  const m = ISO_DATE_TIME.exec(input.trim());
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s = '00', frac = '', zone = 'Z'] = m;
  const [year, month, day, hour, minute, second] = [y, mo, d, h, mi, s].map(Number) as [number, number, number, number, number, number];
  const localMs = Date.UTC(year, month - 1, day, hour, minute, second, Number(frac.padEnd(3, '0').slice(0, 3)));
  const check = new Date(localMs);
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59)
    return undefined;
  if (zone.toUpperCase() === 'Z') return localMs;
  const digits = zone.replace(':', '');
  const [zh, zm] = [Number(digits.slice(1, 3)), Number(digits.slice(3, 5))];
  if (zh > 23 || zm > 59) return undefined;
  return localMs - (digits.startsWith('-') ? -1 : 1) * (zh * 60 + zm) * 60_000;
}

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

/** The event's errors with the API's codes and fields (empty: the API will accept it). `nowMs`: the local clock. */
export function checkEvent(input: unknown, nowMs: number): FieldError[] {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return [{ field: '', code: 'invalid_type', message: 'each event must be a JSON object' }];
  }
  const event = input as Record<string, unknown>;
  const shape = shapeErrors(event);
  if (shape.length > 0) return shape;
  const errors: FieldError[] = [];
  const { email, domain, timestamp, eventName, properties } = event as {
    email?: string;
    domain?: string;
    timestamp?: string;
    eventName: string;
    properties?: Record<string, unknown>;
  };
  if (email === undefined && domain === undefined) errors.push({ field: '/email', code: 'required', message: 'at least one of email or domain is required' });
  const emailProblem = email === undefined ? undefined : emailError(email);
  if (emailProblem) errors.push({ field: '/email', code: 'invalid_format', message: emailProblem });
  const domainProblem = domain === undefined ? undefined : hostNameError(domain);
  if (domainProblem) errors.push({ field: '/domain', code: 'invalid_format', message: domainProblem });
  if (timestamp !== undefined) {
    const ms = timestampMs(timestamp);
    if (ms === undefined)
      errors.push({ field: '/timestamp', code: 'invalid_format', message: 'must be an ISO 8601 date-time with a zone, e.g. "2026-11-21T14:03:07.123Z"' });
    else if (ms > nowMs + MAX_FUTURE_MS) errors.push({ field: '/timestamp', code: 'in_future', message: 'is more than 24 h in the future' });
    else if (ms < 0) errors.push({ field: '/timestamp', code: 'out_of_range', message: 'must be 1970-01-01 or later' });
  }
  for (const [key, value] of Object.entries(properties ?? {})) {
    if ((FORBIDDEN_PROPERTY_KEYS as readonly string[]).includes(key)) {
      errors.push({ field: `/properties/${escapePointer(key)}`, code: 'forbidden_key', message: `the key "${key}" is not allowed` });
    } else if (depthOf(value, MAX_DEPTH + 1) > MAX_DEPTH) {
      errors.push({ field: `/properties/${escapePointer(key)}`, code: 'too_deep', message: `nests deeper than ${MAX_DEPTH} levels` });
    }
  }
  if (eventName.trim().length === 0) errors.push({ field: '/eventName', code: 'required', message: 'must not be blank' });
  else if (!eventName.isWellFormed()) errors.push({ field: '/eventName', code: 'invalid_unicode', message: 'contains an unpaired UTF-16 surrogate' });
  return errors;
}
