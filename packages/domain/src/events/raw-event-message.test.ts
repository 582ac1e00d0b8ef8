import type { EventRecord } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { IDENTITY_HEADER, parseRawEventKey, rawEventKey, rawEventMessage } from './raw-event-message.js';

const record: EventRecord = {
  v: 1,
  accountId: 'acc_7Hq2',
  eventId: 'order:42:paid',
  eventName: 'Paid',
  email: 'ada@example.com',
  domain: null,
  timestampMs: 1_767_225_600_000,
  receivedAtMs: 1_767_225_601_000,
  properties: {},
  source: 'api',
  jobId: null,
};

describe('the events.raw key', () => {
  it('is built once and taken apart again, eventIds with colons included', () => {
    const message = rawEventMessage(record);
    expect(message.key).toBe(rawEventKey(record.accountId, record.eventId));
    expect(parseRawEventKey(String(message.key))).toEqual({ accountId: 'acc_7Hq2', eventId: 'order:42:paid' });
    expect(message.headers?.[IDENTITY_HEADER]).toBe('ada@example.com');
  });

  it('refuses keys our producers never write', () => {
    for (const key of ['', ':evt', 'acc_1:', 'acc_1', 'user_1:evt', 'evt-without-account']) {
      expect(parseRawEventKey(key), key).toBeUndefined();
    }
  });
});
