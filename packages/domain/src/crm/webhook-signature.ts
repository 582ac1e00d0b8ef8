import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signatures of the CRM webhook, the scheme Stripe uses: `X-Ingest-Signature: t=<unix seconds>,v1=<hex>`
 * where hex = HMAC-SHA256(secret, `${t}.${rawBody}`). The timestamp inside the signed payload
 * stops replays of an old request; several `v1` values let a sender sign with an old and a new
 * secret while a receiver rotates.
 */
export const WEBHOOK_SIGNATURE_HEADER = 'X-Ingest-Signature';
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

function hmacHex(secret: string, timestamp: number, rawBody: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex');
}

/** The header value for `rawBody`, signed with each secret (the first is the current one). */
export function signWebhook(secrets: string | string[], rawBody: string | Buffer, nowSeconds = Math.floor(Date.now() / 1000)): string {
  const list = Array.isArray(secrets) ? secrets : [secrets];
  return [`t=${nowSeconds}`, ...list.map((s) => `v1=${hmacHex(s, nowSeconds, rawBody)}`)].join(',');
}

export type WebhookVerification =
  { ok: true; timestamp: number } | { ok: false; reason: 'missing_header' | 'malformed_header' | 'stale_timestamp' | 'signature_mismatch' };

export interface VerifyWebhookOptions {
  toleranceSeconds?: number;
  /** Current time in unix seconds (tests). */
  now?: number;
}

const HEX_SHA256 = /^[0-9a-f]{64}$/;

function parseHeader(header: string): { timestamp: number; signatures: string[] } | undefined {
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const part of header.split(',')) {
    const eq = part.indexOf('=');
    if (eq <= 0) return undefined;
    const name = part.slice(0, eq).trim();
    const value = part.slice(eq + 1).trim();
    if (name === 't') {
      if (timestamp !== undefined || !/^\d{1,12}$/.test(value)) return undefined;
      timestamp = Number(value);
    } else if (name === 'v1') {
      if (!HEX_SHA256.test(value)) return undefined;
      signatures.push(value);
    }
    // Other schemes (v0, future v2) are ignored, as Stripe's receivers do.
  }
  if (timestamp === undefined || signatures.length === 0) return undefined;
  return { timestamp, signatures };
}

/**
 * Checks a received signature against one secret or several (during a rotation) in constant
 * time. `rawBody` must be the exact bytes received: re-serialised JSON does not verify.
 */
export function verifyWebhookSignature(
  secrets: string | string[],
  header: string | undefined | null,
  rawBody: string | Buffer,
  options: VerifyWebhookOptions = {},
): WebhookVerification {
  if (!header) return { ok: false, reason: 'missing_header' };
  const parsed = parseHeader(header);
  if (!parsed) return { ok: false, reason: 'malformed_header' };
  const now = options.now ?? Math.floor(Date.now() / 1000);
  const tolerance = options.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  if (Math.abs(now - parsed.timestamp) > tolerance) return { ok: false, reason: 'stale_timestamp' };
  const candidates = (Array.isArray(secrets) ? secrets : [secrets]).map((s) => Buffer.from(hmacHex(s, parsed.timestamp, rawBody), 'hex'));
  let match = false;
  // Every pair is compared, so the time taken does not tell which secret or signature matched.
  for (const expected of candidates) {
    for (const received of parsed.signatures) {
      if (timingSafeEqual(expected, Buffer.from(received, 'hex'))) match = true;
    }
  }
  return match ? { ok: true, timestamp: parsed.timestamp } : { ok: false, reason: 'signature_mismatch' };
}

/**
 * Standard Webhooks (standardwebhooks.com), which receivers verify with any of its libraries:
 * `webhook-id` (the delivery's id, the same when it is retried), `webhook-timestamp` (unix
 * seconds) and `webhook-signature: v1,<base64 HMAC-SHA256(key, "<id>.<timestamp>.<raw body>")>`,
 * one space-separated `v1,` entry per secret during a rotation. The key is the secret's base64
 * part when the secret is `whsec_<base64>` (the format the libraries generate and expect);
 * any other secret is used as its UTF-8 bytes, which the libraries accept as a raw key
 * (`new Webhook(secret, { format: 'raw' })` in JavaScript).
 */
export const STANDARD_WEBHOOK_HEADERS = { id: 'webhook-id', timestamp: 'webhook-timestamp', signature: 'webhook-signature' } as const;

const STANDARD_SECRET = /^whsec_((?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?)$/;

/** The HMAC key of a secret, as Standard Webhooks libraries derive it. */
export function standardWebhookKey(secret: string): Buffer {
  const base64 = STANDARD_SECRET.exec(secret)?.[1];
  return base64 ? Buffer.from(base64, 'base64') : Buffer.from(secret, 'utf8');
}

/** True when a library's default constructor (`new Webhook(secret)`) takes the secret as it is. */
export function isStandardWebhookSecret(secret: string): boolean {
  return (STANDARD_SECRET.exec(secret)?.[1] ?? '') !== '';
}

export function signStandardWebhook(secrets: string | readonly string[], msgId: string, timestampSeconds: number, rawBody: string | Buffer): string {
  const list = typeof secrets === 'string' ? [secrets] : secrets;
  return list
    .map((s) => `v1,${createHmac('sha256', standardWebhookKey(s)).update(`${msgId}.${timestampSeconds}.`).update(rawBody).digest('base64')}`)
    .join(' ');
}

/** The three Standard Webhooks headers of one delivery, signed with each secret (current first). */
export function standardWebhookHeaders(
  secrets: string | readonly string[],
  msgId: string,
  rawBody: string | Buffer,
  nowSeconds = Math.floor(Date.now() / 1000),
): Record<(typeof STANDARD_WEBHOOK_HEADERS)[keyof typeof STANDARD_WEBHOOK_HEADERS], string> {
  return {
    [STANDARD_WEBHOOK_HEADERS.id]: msgId,
    [STANDARD_WEBHOOK_HEADERS.timestamp]: String(nowSeconds),
    [STANDARD_WEBHOOK_HEADERS.signature]: signStandardWebhook(secrets, msgId, nowSeconds, rawBody),
  };
}
