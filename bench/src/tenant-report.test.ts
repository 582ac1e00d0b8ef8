import { describe, expect, it } from 'vitest';
import { refusals } from './tenant-report.js';

describe('tenant mix refusals', () => {
  it('counts events answered 402 and 429 and those a 202 rejected, against every event sent', () => {
    const r = refusals({
      requests: 10,
      byStatus: { 202: 7, 402: 2, 429: 1 },
      eventsByStatus: { 202: 700, 402: 200, 429: 100 },
      eventsSent: 1_000,
      eventsAccepted: 650,
      eventsRejected: 50,
      eventsAcceptedRepeated: 0,
    });
    expect(r).toEqual({ events402: 200, events429: 100, rejectedIn202: 50, share: 0.35 });
  });
});
