import { describe, expect, it } from 'vitest';
import { createEventRecordDecoder } from '../events/event-record.decode.js';
import { createEventValidator } from '../events/validate-event.js';
import { identityOf, uniqueEventKey } from '../events/raw-event-message.js';
import { mapSegmentMessage, SEGMENT_EVENT_NAMES, segmentMessageBytes } from './segment-message.js';
import { segmentDeadLetter, toSegmentEventRecord } from './segment-record.js';

const RECEIVED = Date.UTC(2026, 10, 27, 12, 0, 0);
const map = (input: unknown, options: Partial<Parameters<typeof mapSegmentMessage>[1]> = {}) =>
  mapSegmentMessage(input, { receivedAtMs: RECEIVED, ...options });
const mapped = (input: unknown, options: Partial<Parameters<typeof mapSegmentMessage>[1]> = {}) => {
  const r = map(input, options);
  if (!r.ok) throw new Error(`refused: ${JSON.stringify(r.error)}`);
  return r.mapped;
};

describe('mapSegmentMessage', () => {
  it('maps a track call: messageId → eventId, event → eventName, properties, userId, anonymousId and context kept', () => {
    const context = {
      ip: '203.0.113.9',
      userAgent: 'Mozilla/5.0',
      page: { url: 'https://acme.io/p' },
      campaign: { source: 'news' },
      library: { name: 'analytics-node', version: '3.1.0' },
    };
    expect(
      mapped({ type: 'track', messageId: 'node-1', userId: 'u-42', anonymousId: 'anon-1', event: 'Order Completed', properties: { total: 12.5 }, context }),
    ).toEqual({
      event: { eventId: 'node-1', eventName: 'Order Completed', timestamp: new Date(RECEIVED).toISOString(), properties: { total: 12.5 } },
      userId: 'u-42',
      anonymousId: 'anon-1',
      context,
    });
  });

  it('corrects the timestamp with sentAt against the receive time (Segment clock-skew rule) and keeps the original', () => {
    // The device clock is 1 h fast; the call happened 5 s before it was sent.
    const m = mapped({ type: 'track', userId: 'u', event: 'E', timestamp: '2026-11-27T13:00:00.000Z', sentAt: '2026-11-27T13:00:05.000Z' });
    expect(m.event.timestamp).toBe(new Date(RECEIVED - 5_000).toISOString());
    expect(m.originalTimestampMs).toBe(Date.UTC(2026, 10, 27, 13, 0, 0));
    // A batch's sentAt applies to messages without their own.
    expect(mapped({ type: 'track', userId: 'u', event: 'E', timestamp: '2026-11-27T13:00:00Z' }, { batchSentAt: '2026-11-27T13:00:02Z' }).event.timestamp).toBe(
      new Date(RECEIVED - 2_000).toISOString(),
    );
    // Without sentAt the claimed time stands; without any time the receive time is used.
    expect(mapped({ type: 'track', userId: 'u', event: 'E', timestamp: '2026-01-01T00:00:00Z' }).event.timestamp).toBe('2026-01-01T00:00:00.000Z');
    expect(mapped({ type: 'track', userId: 'u', event: 'E' })).not.toHaveProperty('originalTimestampMs');
    expect(map({ type: 'track', userId: 'u', event: 'E', timestamp: 'yesterday' })).toMatchObject({
      ok: false,
      error: { field: '/timestamp', code: 'invalid_format' },
    });
    expect(map({ type: 'track', userId: 'u', event: 'E', timestamp: '2026-01-01T00:00:00Z', sentAt: 5 })).toMatchObject({
      ok: false,
      error: { field: '/sentAt' },
    });
  });

  it('names the calls without an event name and puts traits in the properties', () => {
    expect(mapped({ type: 'page', anonymousId: 'a', name: 'Pricing', properties: { path: '/pricing' } }).event).toMatchObject({
      eventName: SEGMENT_EVENT_NAMES.page,
      properties: { path: '/pricing', name: 'Pricing' },
    });
    expect(mapped({ type: 'screen', userId: 'u', name: 'Home' }).event.eventName).toBe('$screen');
    expect(mapped({ type: 'alias', userId: 'u', previousId: 'anon-7' }).event).toMatchObject({ eventName: '$alias', properties: { previousId: 'anon-7' } });
    expect(map({ type: 'alias', userId: 'u' })).toMatchObject({ ok: false, error: { field: '/previousId', code: 'required' } });
  });

  it('takes the email of an identify from traits.email, and the domain of a group from traits.domain or website', () => {
    expect(mapped({ type: 'identify', userId: 'u', traits: { email: ' Ada@Example.COM ', plan: 'pro' } }).event).toMatchObject({
      eventName: '$identify',
      email: 'ada@example.com',
      properties: { email: ' Ada@Example.COM ', plan: 'pro' },
    });
    // A malformed email stays a trait: the call is stored, without an email.
    expect(mapped({ type: 'identify', userId: 'u', traits: { email: 'not-an-email' } }).event).not.toHaveProperty('email');
    expect(mapped({ type: 'group', userId: 'u', groupId: 'g1', traits: { domain: 'Acme.io' } }).event).toMatchObject({
      eventName: '$group',
      domain: 'acme.io',
      properties: { domain: 'Acme.io', groupId: 'g1' },
    });
    expect(mapped({ type: 'group', userId: 'u', groupId: 'g1', traits: { website: 'https://www.Acme.io/about' } }).event.domain).toBe('acme.io');
    expect(mapped({ type: 'group', userId: 'u', groupId: 'g1', traits: { website: 'acme.io' } }).event.domain).toBe('acme.io');
    expect(map({ type: 'group', userId: 'u' })).toMatchObject({ ok: false, error: { field: '/groupId' } });
    // A track call's email is not guessed from anywhere (the identity map joins it later).
    expect(mapped({ type: 'track', userId: 'u', event: 'E', context: { traits: { email: 'a@b.co' } } }).event).not.toHaveProperty('email');
  });

  it('refuses what Segment refuses, naming the field', () => {
    expect(map('nope')).toMatchObject({ ok: false, error: { code: 'invalid_type' } });
    expect(map({ type: 'track', event: 'E', messageId: 'm1' })).toEqual({
      ok: false,
      messageId: 'm1',
      error: { field: '/userId', code: 'required', message: 'a message needs a userId or an anonymousId' },
    });
    expect(map({ type: 'track', userId: '', anonymousId: '', event: 'E' })).toMatchObject({ ok: false, error: { field: '/userId' } });
    expect(map({ type: 'track', userId: 'x'.repeat(256), event: 'E' })).toMatchObject({ ok: false, error: { field: '/userId', code: 'too_long' } });
    expect(map({ type: 'purchase', userId: 'u' })).toMatchObject({ ok: false, error: { field: '/type', code: 'unknown_type' } });
    expect(map({ type: 'track', userId: 'u' })).toMatchObject({ ok: false, error: { field: '/event', code: 'required' } });
    expect(map({ type: 'track', userId: 'u', event: 'E', properties: [1] })).toMatchObject({
      ok: false,
      error: { field: '/properties', code: 'invalid_type' },
    });
    // A route's own type wins over the message's.
    expect(mapped({ type: 'identify', userId: 'u', event: 'E' }, { type: 'track' }).event.eventName).toBe('E');
    // Numeric ids (some SDKs let them through) become strings.
    expect(mapped({ type: 'track', userId: 42, event: 'E' }).userId).toBe('42');
  });

  it('merges a batch context under the message context', () => {
    expect(
      mapped({ type: 'track', userId: 'u', event: 'E', context: { ip: '1.2.3.4' } }, { batchContext: { library: { name: 'x' }, ip: '9.9.9.9' } }).context,
    ).toEqual({
      library: { name: 'x' },
      ip: '1.2.3.4',
    });
  });

  it('measures messages as JSON bytes', () => {
    expect(segmentMessageBytes({ a: 'é' })).toBe(Buffer.byteLength('{"a":"é"}'));
  });
});

describe('the record and the dead letter of a Segment message', () => {
  const validate = createEventValidator({ requireContact: false });

  it('carries userId, anonymousId, context and originalTimestampMs; an event with a userId is keyed u:<userId> on events.unique, with or without an email', () => {
    const m = mapped({
      type: 'track',
      messageId: 'm-1',
      userId: 'u-1',
      anonymousId: 'a-1',
      event: 'E',
      timestamp: '2026-11-27T11:00:00Z',
      context: { ip: '1.2.3.4' },
    });
    const check = validate(m.event, RECEIVED);
    if (!check.ok) throw new Error(JSON.stringify(check.errors));
    const record = toSegmentEventRecord(check.event, m, { accountId: 'acc_x', receivedAtMs: RECEIVED });
    expect(record).toEqual({
      v: 1,
      accountId: 'acc_x',
      eventId: 'm-1',
      eventName: 'E',
      email: null,
      domain: null,
      timestampMs: Date.UTC(2026, 10, 27, 11),
      receivedAtMs: RECEIVED,
      properties: {},
      source: 'api',
      jobId: null,
      userId: 'u-1',
      anonymousId: 'a-1',
      context: { ip: '1.2.3.4' },
      originalTimestampMs: Date.UTC(2026, 10, 27, 11),
    });
    // Readers (dedupe, storage, the sink) take it: the fields are optional members of v1.
    expect(createEventRecordDecoder()(Buffer.from(JSON.stringify(record)))).toEqual({ ok: true, record });
    expect(uniqueEventKey(record)).toBe('acc_x:u:u-1');
    expect(identityOf({ ...record, userId: undefined } as never)).toBe('a:a-1');
    // The sender's person keys it even with an email, so an identify and the user's tracks share a partition.
    expect(identityOf({ ...record, email: 'ada@acme.io' })).toBe('u:u-1');
    expect(identityOf({ ...record, userId: undefined, anonymousId: undefined, email: 'ada@acme.io' } as never)).toBe('ada@acme.io');
  });

  it('the validator without requireContact still checks everything else', () => {
    expect(validate({ eventName: 'E', properties: { __proto__x: 1 } }, RECEIVED).ok).toBe(true);
    expect(createEventValidator()({ eventName: 'E' }, RECEIVED)).toMatchObject({ ok: false, errors: [{ field: '/email', code: 'required' }] });
    expect(validate({ eventName: 'E', eventId: 'has space' }, RECEIVED)).toMatchObject({ ok: false, errors: [{ field: '/eventId' }] });
  });

  it('a dead letter is keyed by account and messageId, holds the message and says why', () => {
    const letter = segmentDeadLetter({
      accountId: 'acc_x',
      messageId: 'm-2',
      route: '/v1/batch',
      code: 'too_large',
      reason: 'r'.repeat(2_000),
      message: { a: 1 },
      atMs: RECEIVED,
    });
    expect(letter.key).toBe('acc_x:m-2');
    expect(letter.value).toBe('{"a":1}');
    expect(letter.headers).toMatchObject({
      'dlq-code': 'too_large',
      'dlq-route': '/v1/batch',
      'dlq-consumer': 'gateway',
      'dlq-failed-at': new Date(RECEIVED).toISOString(),
    });
    expect(letter.headers?.['dlq-reason']).toHaveLength(1_000);
    expect(letter.headers).not.toHaveProperty('dlq-source-topic');
  });
});
