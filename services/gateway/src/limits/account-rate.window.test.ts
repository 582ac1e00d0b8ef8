import { describe, expect, it } from 'vitest';
import { policyField, stateField } from '@ingest/http';
import { admit, capacityOf, gcraParams, type RatePolicy } from './account-rate.window.js';

const requests: RatePolicy = { name: 'account_requests', ratePerSecond: 5, burstSeconds: 2 };
const events: RatePolicy = { name: 'account_events', ratePerSecond: 100, burstSeconds: 2 };
const params = [gcraParams(requests), gcraParams(events)];
const S = 1_000_000;
const T0 = 1_700_000_000 * S;

/** Runs requests of `costs` at `atUs`, carrying the TATs, and says which were admitted. */
function run(steps: { atUs: number; events: number }[]): { allowed: boolean; hit: number; retryAfterUs: number; remaining: number[] }[] {
  let tats: (number | undefined)[] = [undefined, undefined];
  return steps.map((s) => {
    const a = admit(tats, s.atUs, [1, s.events], params);
    tats = a.tats;
    return { allowed: a.allowed, hit: a.hit, retryAfterUs: a.retryAfterUs, remaining: a.states.map((st) => st.remaining) };
  });
}

describe('per-account ceilings (GCRA)', () => {
  it('lets an idle account spend the whole bucket at once, then refuses, charging the refusal nothing', () => {
    expect(capacityOf(requests)).toBe(10);
    const out = run(Array.from({ length: 12 }, () => ({ atUs: T0, events: 1 })));
    expect(out.map((o) => o.allowed)).toEqual([...Array<boolean>(10).fill(true), false, false]);
    expect(out[9]?.remaining).toEqual([0, 190]);
    // Refused by the requests ceiling, retry when one request has refilled (1/5 s).
    expect(out[10]).toMatchObject({ hit: 0, retryAfterUs: S / 5, remaining: [0, 190] });
  });

  it('refills at the rate: after a drained bucket, one request per 1/rate seconds', () => {
    const drained = Array.from({ length: 10 }, () => ({ atUs: T0, events: 0 }));
    const out = run([...drained, { atUs: T0 + S / 5 - 1, events: 0 }, { atUs: T0 + S / 5, events: 0 }, { atUs: T0 + S / 5, events: 0 }]);
    expect(out.slice(10).map((o) => o.allowed)).toEqual([false, true, false]);
  });

  it('counts events, not requests, against the events ceiling', () => {
    // 200 events a bucket: 150 fit, the next 100 do not (while the requests ceiling has room).
    const out = run([
      { atUs: T0, events: 150 },
      { atUs: T0, events: 100 },
      { atUs: T0, events: 50 },
    ]);
    expect(out.map((o) => o.allowed)).toEqual([true, false, true]);
    expect(out[1]).toMatchObject({ hit: 1, retryAfterUs: 50 * (S / 100) });
    expect(out[2]?.remaining).toEqual([8, 0]);
  });

  it('admits a request larger than the bucket only into a full bucket, then makes the account wait it off', () => {
    const out = run([
      { atUs: T0, events: 1 },
      { atUs: T0, events: 1_000 }, // 10 s of events, bucket not full: wait until it is
      { atUs: T0 + S / 100, events: 1_000 }, // full again: admitted alone
      { atUs: T0 + S / 100 + 8 * S, events: 1 }, // still owes 2 s of events
      { atUs: T0 + S / 100 + 8 * S + 1, events: 0 }, // a request without events is not held back by it
    ]);
    expect(out.map((o) => o.allowed)).toEqual([true, false, true, false, true]);
    expect(out[1]).toMatchObject({ hit: 1, retryAfterUs: S / 100 });
    expect(out[3]).toMatchObject({ hit: 1, retryAfterUs: S / 100 });
  });

  it('keeps an exact capacity when the rate does not divide a second', () => {
    const odd = gcraParams({ name: 'account_requests', ratePerSecond: 3, burstSeconds: 10 });
    let tats: (number | undefined)[] = [undefined];
    const admitted = Array.from({ length: 31 }, () => {
      const a = admit(tats, T0, [1], [odd]);
      tats = a.tats;
      return a.allowed;
    }).filter(Boolean).length;
    expect(admitted).toBe(30);
  });

  it('writes the RateLimit-Policy and RateLimit fields of the IETF draft', () => {
    const items = [
      { name: 'account_requests' as const, quota: 10, windowSeconds: 2, remaining: 3, resetSeconds: 2 },
      { name: 'account_events' as const, quota: 200, windowSeconds: 2, unit: 'events' as const, remaining: 0, resetSeconds: 1 },
    ];
    expect(policyField(items)).toBe('"account_requests";q=10;w=2, "account_events";q=200;w=2;qu="events"');
    expect(stateField(items)).toBe('"account_requests";r=3;t=2, "account_events";r=0;t=1');
  });
});
