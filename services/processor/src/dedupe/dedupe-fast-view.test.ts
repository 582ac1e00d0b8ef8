import type { EventRecord } from '@ingest/schemas';
import { type ConsumedMessage } from '@ingest/platform';
import { IDENTITY_HEADER, rawEventMessage } from '@ingest/domain';
import { describe, expect, it } from 'vitest';
import { fastView } from './dedupe.consumer.js';
import { fingerprint } from './dedupe-window.js';

const record: EventRecord = {
  v: 1,
  accountId: 'acc_7Kq2',
  eventId: 'evt:with:colons',
  eventName: 'Signed Up',
  email: 'ada@example.com',
  domain: null,
  timestampMs: 1_764_000_000_000,
  receivedAtMs: 1_764_000_000_500,
  properties: {},
  source: 'api',
  jobId: null,
};

/** A message as the consumer hands it over, from what a producer wrote. */
function consumed(message: ReturnType<typeof rawEventMessage>, timestamp = 1_764_000_000_501): ConsumedMessage {
  return {
    topic: 'events.raw',
    partition: 0,
    offset: '0',
    key: message.key === null ? null : Buffer.from(message.key),
    value: Buffer.from(message.value),
    headers: message.headers ?? {},
    timestamp,
  };
}

describe('dedupe fast view of our own raw messages', () => {
  it('gives the same fingerprint and events.unique key as the parsed record, without parsing', () => {
    const view = fastView(consumed(rawEventMessage(record)));
    expect(view?.fp).toBe(fingerprint(record.accountId, record.eventId));
    expect(view?.uniqueKey).toBe('acc_7Kq2:ada@example.com');
    expect(view?.receivedAtMs).toBe(1_764_000_000_501);
  });

  it('keys company events by domain and events without identity by the account alone', () => {
    expect(fastView(consumed(rawEventMessage({ ...record, email: null, domain: 'example.com' })))?.uniqueKey).toBe('acc_7Kq2:example.com');
    expect(fastView(consumed(rawEventMessage({ ...record, email: null, domain: null })))?.uniqueKey).toBe('acc_7Kq2:');
  });

  it('leaves every other message to the full decode', () => {
    const ours = rawEventMessage(record);
    expect(fastView(consumed({ ...ours, headers: {} }))).toBeUndefined();
    expect(fastView(consumed({ ...ours, key: null }))).toBeUndefined();
    expect(fastView(consumed({ ...ours, key: 'not-an-account:evt' }))).toBeUndefined();
    expect(fastView(consumed({ ...ours, value: '' }))).toBeUndefined();
    expect(ours.headers).toEqual({ [IDENTITY_HEADER]: 'ada@example.com' });
  });
});
