import { describe, expect, it } from 'vitest';
import { createBodyFactory, pad } from './events.js';

describe('bench event bodies', () => {
  it('pads events to the size asked with words, the same for the same event in every run', () => {
    for (const length of [0, 1, 150, 5_000]) expect(pad(7, length)).toHaveLength(length);
    expect(pad(7, 300)).toBe(pad(7, 300));
    expect(pad(7, 300)).not.toBe(pad(8, 300));
    expect(pad(7, 300)).toMatch(/^([a-z]{3,9} )+[a-z ]*$/);
    const { body } = createBodyFactory('run', 300).body(10);
    const events = (JSON.parse(body) as { events: unknown[] }).events.map((e) => JSON.stringify(e).length);
    for (const size of events) expect(size).toBeGreaterThanOrEqual(298);
    for (const size of events) expect(size).toBeLessThanOrEqual(302);
  });
});
