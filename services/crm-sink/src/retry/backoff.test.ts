import { describe, expect, it } from 'vitest';
import { fullJitterDelayMs, INFRA_RETRY, infraRetryDelayMs } from './backoff.js';

describe('full jitter backoff', () => {
  const options = { baseMs: 100, capMs: 5_000 };

  it('grows exponentially up to the cap', () => {
    expect(fullJitterDelayMs(0, options, () => 0.999)).toBe(99);
    expect(fullJitterDelayMs(3, options, () => 0.999)).toBe(799);
    expect(fullJitterDelayMs(20, options, () => 0.999)).toBe(4995);
  });

  it('spreads delays down to zero', () => {
    expect(fullJitterDelayMs(5, options, () => 0)).toBe(0);
    expect(fullJitterDelayMs(5, options, () => 0.5)).toBe(1600);
  });
});

describe('infrastructure retry', () => {
  it('waits at least the floor, at most the one cap (5 s) plus the floor', () => {
    expect(INFRA_RETRY.capMs).toBe(5_000);
    expect(infraRetryDelayMs(0, () => 0)).toBe(100);
    expect(infraRetryDelayMs(50, () => 0.999)).toBe(4_995 + 100);
  });
});
