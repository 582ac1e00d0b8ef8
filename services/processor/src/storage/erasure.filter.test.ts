import type { EventRecord } from '@ingest/schemas';
import { createSuppressionSet, encodeSuppression, identifierHash, suppressionKey } from '@ingest/domain';
import { describe, expect, it } from 'vitest';
import { createErasureFilter } from './erasure.filter.js';

const event = (email: string | null, domain: string | null): EventRecord => ({
  v: 1,
  accountId: 'acc_1',
  eventId: 'e1',
  eventName: 'signup',
  email,
  domain,
  timestampMs: Date.UTC(2026, 10, 1),
  receivedAtMs: Date.UTC(2026, 10, 1),
  properties: {},
  source: 'api',
  jobId: null,
});

describe('the storage writer erasure filter', () => {
  it('drops the events of an erased email or domain, keeps the others', () => {
    const set = createSuppressionSet();
    const r = { v: 1 as const, id: 'x', accountId: 'acc_1', type: 'email', identifierHash: identifierHash('acc_1', 'email', 'ada@example.com'), erasedAt: '' };
    set.apply(suppressionKey(r), encodeSuppression(r));
    const filter = createErasureFilter({ sync: async () => undefined, suppressed: set.suppressed });
    expect(filter.erased(event('ada@example.com', null))).toBe(true);
    expect(filter.erased(event('ada@example.com', 'example.com'))).toBe(true);
    expect(filter.erased(event('bob@example.com', 'example.com'))).toBe(false);
    expect(filter.erased(event(null, null))).toBe(false);
  });

  it('catches up with the list before each batch, and a batch waits while the list cannot', async () => {
    let syncs = 0;
    let fail = false;
    const filter = createErasureFilter({
      sync: async () => {
        syncs++;
        if (fail) throw new Error('kafka away');
      },
      suppressed: () => false,
    });
    await filter.beforeBatch();
    expect(syncs).toBe(1);
    fail = true;
    // The batch fails (and is read again) rather than being stored unchecked.
    await expect(filter.beforeBatch()).rejects.toThrow('kafka away');
  });
});
