import type { EventRecord } from '@ingest/schemas';

/** The time of the identity tests' events (a fixed day, so the entries they write are known). */
export const IDENTITY_TEST_AT = Date.UTC(2026, 10, 28);

/**
 * An event as the identity map sees it (packages/domain/src/identity, the processor's identity
 * step): account acc_x, a page view at IDENTITY_TEST_AT, without email, domain, userId or
 * anonymousId unless `fields` give them.
 */
export function identityTestRecord(fields: Partial<EventRecord>): EventRecord {
  return {
    v: 1,
    accountId: 'acc_x',
    eventId: 'e',
    eventName: 'Page Viewed',
    email: null,
    domain: null,
    timestampMs: IDENTITY_TEST_AT,
    receivedAtMs: IDENTITY_TEST_AT,
    properties: {},
    source: 'api',
    jobId: null,
    ...fields,
  };
}
