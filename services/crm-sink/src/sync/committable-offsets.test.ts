import { describe, expect, it } from 'vitest';
import { createCommittableOffsets } from './committable-offsets.js';

describe('offset tracker', () => {
  it('commits only up to the lowest unfinished offset', () => {
    const t = createCommittableOffsets();
    ['10', '11', '12', '13'].forEach((o) => t.add(o));
    expect(t.committable()).toBe('10');
    t.finish('11');
    t.finish('13');
    expect(t.committable()).toBe('10');
    t.finish('10');
    expect(t.committable()).toBe('12');
    t.finish('12');
    expect(t.committable()).toBe('14');
    expect(t.unfinished()).toBe(0);
  });

  it('ignores offsets finished twice or never added', () => {
    const t = createCommittableOffsets();
    t.add('5');
    t.add('6');
    t.finish('6');
    t.finish('6');
    t.finish('99');
    expect(t.unfinished()).toBe(1);
    expect(t.committable()).toBe('5');
    expect(t.next()).toBe('7');
  });

  it('has nothing to commit before the first offset and handles 64-bit offsets', () => {
    const t = createCommittableOffsets();
    expect(t.committable()).toBeUndefined();
    t.add('9223372036854775806');
    t.finish('9223372036854775806');
    expect(t.committable()).toBe('9223372036854775807');
  });

  it('stays correct over many offsets (prefix compaction)', () => {
    const t = createCommittableOffsets();
    for (let i = 0; i < 5000; i += 1) t.add(String(i));
    for (let i = 4999; i >= 1; i -= 1) t.finish(String(i));
    expect(t.committable()).toBe('0');
    t.finish('0');
    expect(t.committable()).toBe('5000');
  });
});
