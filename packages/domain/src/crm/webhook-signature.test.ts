import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { signWebhook, verifyWebhookSignature } from './webhook-signature.js';

const SECRET = 'whsec_current';
const BODY = '{"type":"records.upsert","records":[{"key":"ada@example.com"}]}';
const NOW = 1_800_000_000;

describe('webhook signatures', () => {
  it('follows the documented algorithm: hex HMAC-SHA256 of "<t>.<raw body>"', () => {
    const expected = createHmac('sha256', SECRET).update(`${NOW}.${BODY}`).digest('hex');
    expect(signWebhook(SECRET, BODY, NOW)).toBe(`t=${NOW},v1=${expected}`);
  });

  it('accepts a good signature and returns its timestamp', () => {
    expect(verifyWebhookSignature(SECRET, signWebhook(SECRET, BODY, NOW), BODY, { now: NOW + 10 })).toEqual({ ok: true, timestamp: NOW });
  });

  it('accepts a Buffer body equal to the signed string', () => {
    expect(verifyWebhookSignature(SECRET, signWebhook(SECRET, BODY, NOW), Buffer.from(BODY), { now: NOW }).ok).toBe(true);
  });

  it('refuses a tampered body', () => {
    const header = signWebhook(SECRET, BODY, NOW);
    expect(verifyWebhookSignature(SECRET, header, BODY.replace('ada', 'eve'), { now: NOW })).toEqual({ ok: false, reason: 'signature_mismatch' });
  });

  it('refuses a wrong secret', () => {
    expect(verifyWebhookSignature('whsec_other', signWebhook(SECRET, BODY, NOW), BODY, { now: NOW })).toEqual({ ok: false, reason: 'signature_mismatch' });
  });

  it('refuses a timestamp outside the tolerance, in the past and in the future', () => {
    const header = signWebhook(SECRET, BODY, NOW);
    expect(verifyWebhookSignature(SECRET, header, BODY, { now: NOW + 301 })).toEqual({ ok: false, reason: 'stale_timestamp' });
    expect(verifyWebhookSignature(SECRET, header, BODY, { now: NOW - 301 })).toEqual({ ok: false, reason: 'stale_timestamp' });
    expect(verifyWebhookSignature(SECRET, header, BODY, { now: NOW + 300 }).ok).toBe(true);
    expect(verifyWebhookSignature(SECRET, header, BODY, { now: NOW + 60, toleranceSeconds: 30 })).toEqual({ ok: false, reason: 'stale_timestamp' });
  });

  it('refuses a timestamp changed after signing', () => {
    const header = signWebhook(SECRET, BODY, NOW).replace(`t=${NOW}`, `t=${NOW + 1}`);
    expect(verifyWebhookSignature(SECRET, header, BODY, { now: NOW })).toEqual({ ok: false, reason: 'signature_mismatch' });
  });

  it.each([
    ['', 'missing_header'],
    ['garbage', 'malformed_header'],
    [`t=${NOW}`, 'malformed_header'],
    ['v1=' + 'a'.repeat(64), 'malformed_header'],
    [`t=abc,v1=${'a'.repeat(64)}`, 'malformed_header'],
    [`t=${NOW},v1=xyz`, 'malformed_header'],
    [`t=${NOW},t=${NOW},v1=${'a'.repeat(64)}`, 'malformed_header'],
  ])('refuses the malformed header %j', (header, reason) => {
    expect(verifyWebhookSignature(SECRET, header, BODY, { now: NOW })).toEqual({ ok: false, reason });
  });

  it('supports secret rotation on both sides: several v1 values, several accepted secrets', () => {
    const bothSigned = signWebhook(['whsec_new', SECRET], BODY, NOW);
    expect(bothSigned.split(',')).toHaveLength(3);
    // A receiver that still knows only the old secret accepts the request signed with both.
    expect(verifyWebhookSignature(SECRET, bothSigned, BODY, { now: NOW }).ok).toBe(true);
    // A receiver that accepts old and new accepts a request signed with the new one only.
    expect(verifyWebhookSignature([SECRET, 'whsec_new'], signWebhook('whsec_new', BODY, NOW), BODY, { now: NOW }).ok).toBe(true);
    expect(verifyWebhookSignature(['whsec_a', 'whsec_b'], bothSigned, BODY, { now: NOW }).ok).toBe(false);
  });

  it('ignores unknown schemes next to a valid v1', () => {
    const header = `${signWebhook(SECRET, BODY, NOW)},v0=${'b'.repeat(64)}`;
    expect(verifyWebhookSignature(SECRET, header, BODY, { now: NOW }).ok).toBe(true);
  });
});
