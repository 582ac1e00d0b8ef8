import { describe, expect, it } from 'vitest';
import { createTokenBucket } from './token-bucket.js';

describe('token bucket', () => {
  it('allows a burst, then one token per 1/rate seconds', () => {
    const bucket = createTokenBucket({ ratePerSecond: 10, burst: 3, nowMs: 0 });
    expect([bucket.tryTake(0), bucket.tryTake(0), bucket.tryTake(0)]).toEqual([0, 0, 0]);
    expect(bucket.tryTake(0)).toBe(100);
    expect(bucket.tryTake(50)).toBe(50);
    expect(bucket.tryTake(100)).toBe(0);
    expect(bucket.tryTake(100)).toBe(100);
  });

  it('never holds more than the burst after a long idle time', () => {
    const bucket = createTokenBucket({ ratePerSecond: 1, burst: 2, nowMs: 0 });
    const taken = Array.from({ length: 4 }, () => bucket.tryTake(3_600_000));
    expect(taken).toEqual([0, 0, 1000, 1000]);
  });

  it('over any window admits at most burst + rate * seconds', () => {
    const bucket = createTokenBucket({ ratePerSecond: 5, burst: 5, nowMs: 0 });
    let admitted = 0;
    for (let t = 0; t <= 2_000; t += 10) if (bucket.tryTake(t) === 0) admitted += 1;
    expect(admitted).toBeLessThanOrEqual(5 + 5 * 2);
    expect(admitted).toBeGreaterThanOrEqual(14);
  });
});
