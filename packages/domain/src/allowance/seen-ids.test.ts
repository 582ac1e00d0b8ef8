import { describe, expect, it } from 'vitest';
import { MAX_SEEN_SHARDS, SEEN_BUCKET_MS, SEEN_OVERLAP_MS, seenBucket, seenMember, seenShards } from './seen-ids.js';

describe('seen ids', () => {
  it('sizes shards from the monthly limit so a shard stays an intset (≤ 512) even around a month boundary', () => {
    expect(seenShards(1_000)).toBe(8);
    expect(seenShards(50_000)).toBe(512);
    expect(seenShards(500_000)).toBe(4_096);
    expect(seenShards(10_000_000_000)).toBe(MAX_SEEN_SHARDS);
    for (const limit of [1_000, 50_000, 500_000]) expect((2 * limit) / seenShards(limit)).toBeLessThanOrEqual(256);
  });

  it('makes a member the script can file by its leading digits: the shard, then 14 digits', () => {
    for (const shards of [1, 8, 4_096, MAX_SEEN_SHARDS]) {
      for (let i = 0; i < 2_000; i++) {
        const member = seenMember(`event-${i}`, shards);
        expect(BigInt(member)).toBeLessThan(2n ** 63n);
        expect(BigInt(member)).toBeGreaterThanOrEqual(0n);
        const shard = member.length > 14 ? Number(member.slice(0, -14)) : 0;
        expect(shard).toBeLessThan(shards);
        expect(seenMember(`event-${i}`, shards)).toBe(member);
      }
    }
    expect(seenMember('a', 4_096)).not.toBe(seenMember('b', 4_096));
  });

  it('spreads ids evenly over the shards', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 40_000; i++) {
      const m = seenMember(`id-${i}`, 64);
      const shard = m.length > 14 ? m.slice(0, -14) : '';
      counts.set(shard, (counts.get(shard) ?? 0) + 1);
    }
    expect(counts.size).toBe(64);
    expect(Math.max(...counts.values())).toBeLessThan(625 * 1.25);
  });

  it('looks in the previous bucket during the first minutes of a bucket only', () => {
    const start = 1000 * SEEN_BUCKET_MS;
    expect(seenBucket(start)).toEqual({ bucket: 1000, checkPrevious: true });
    expect(seenBucket(start + SEEN_OVERLAP_MS - 1)).toEqual({ bucket: 1000, checkPrevious: true });
    expect(seenBucket(start + SEEN_OVERLAP_MS)).toEqual({ bucket: 1000, checkPrevious: false });
    expect(seenBucket(start + SEEN_BUCKET_MS - 1)).toEqual({ bucket: 1000, checkPrevious: false });
  });
});
