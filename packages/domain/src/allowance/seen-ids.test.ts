import { createHash, createHmac } from 'node:crypto';
import siphash24 from 'siphash24';
import { describe, expect, it } from 'vitest';
import { MAX_SEEN_SHARDS, SEEN_BUCKET_MS, SEEN_OVERLAP_MS, keyedHash64, seenBucket, seenIdsKey, seenMember, seenShards } from './seen-ids.js';

const KEY = Buffer.from('seen-ids-unit-test-key-0123456789abcdef');

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
        const member = seenMember(KEY, `event-${i}`, shards);
        expect(BigInt(member)).toBeLessThan(2n ** 63n);
        expect(BigInt(member)).toBeGreaterThanOrEqual(0n);
        const shard = member.length > 14 ? Number(member.slice(0, -14)) : 0;
        expect(shard).toBeLessThan(shards);
        expect(seenMember(KEY, `event-${i}`, shards)).toBe(member);
      }
    }
    expect(seenMember(KEY, 'a', 4_096)).not.toBe(seenMember(KEY, 'b', 4_096));
  });

  it('spreads ids evenly over the shards', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 40_000; i++) {
      const m = seenMember(KEY, `id-${i}`, 64);
      const shard = m.length > 14 ? m.slice(0, -14) : '';
      counts.set(shard, (counts.get(shard) ?? 0) + 1);
    }
    expect(counts.size).toBe(64);
    expect(Math.max(...counts.values())).toBeLessThan(625 * 1.25);
  });

  it('gives 100,000 ids 100,000 members in 64 shards (the value keeps its 46 bits within a shard)', () => {
    const members = new Set<string>();
    for (let i = 0; i < 100_000; i++) members.add(seenMember(KEY, `evt-${i}`, 64));
    expect(members.size).toBe(100_000);
  });

  it('looks in the previous bucket during the first minutes of a bucket only', () => {
    const start = 1000 * SEEN_BUCKET_MS;
    expect(seenBucket(start)).toEqual({ bucket: 1000, checkPrevious: true });
    expect(seenBucket(start + SEEN_OVERLAP_MS - 1)).toEqual({ bucket: 1000, checkPrevious: true });
    expect(seenBucket(start + SEEN_OVERLAP_MS)).toEqual({ bucket: 1000, checkPrevious: false });
    expect(seenBucket(start + SEEN_BUCKET_MS - 1)).toEqual({ bucket: 1000, checkPrevious: false });
  });

  it('depends on the key: another key gives every id another member, and another shard for most', () => {
    const other = Buffer.from('another-seen-ids-key-0123456789abcdefgh');
    let sameShard = 0;
    for (let i = 0; i < 1_000; i++) {
      const a = seenMember(KEY, `id-${i}`, 64);
      const b = seenMember(other, `id-${i}`, 64);
      expect(b).not.toBe(a);
      if ((a.length > 14 ? a.slice(0, -14) : '') === (b.length > 14 ? b.slice(0, -14) : '')) sameShard++;
    }
    // 1 in 64 by chance.
    expect(sameShard).toBeLessThan(50);
  });

  it('regression (issue 26): ids precomputed to share a member under the old unkeyed MD5 no longer share one', () => {
    // Found offline with a birthday search over 2^25 ids: each pair has the same MD5 mod 10^14,
    // the member of the old scheme (one shard). Sent in one batch, the second of each pair was
    // taken for a repeat of the first and left uncounted until the reconciler's next round.
    const oldMember = (id: string) => (createHash('md5').update(id).digest().readBigUInt64BE(0) % 10n ** 14n).toString();
    const pairs = [
      ['evt-3259621', 'evt-3421198'],
      ['evt-3892316', 'evt-9348557'],
      ['evt-4912780', 'evt-17258146'],
      ['evt-7495197', 'evt-13692926'],
      ['evt-9073987', 'evt-28873479'],
      ['evt-9987731', 'evt-27492452'],
    ] as const;
    for (const [a, b] of pairs) {
      expect(oldMember(a), `${a} and ${b} under MD5`).toBe(oldMember(b));
      expect(seenMember(KEY, a, 1), `${a} and ${b} under the keyed hash`).not.toBe(seenMember(KEY, b, 1));
    }
  });

  it('takes SEEN_IDS_HMAC_KEY as its bytes, refuses one under 32 bytes naming it, and makes a random one when it is empty', () => {
    expect(seenIdsKey({ SEEN_IDS_HMAC_KEY: 'k'.repeat(64) })).toEqual({ key: Buffer.from('k'.repeat(64)), generated: false });
    expect(() => seenIdsKey({ SEEN_IDS_HMAC_KEY: 'short' })).toThrow(/SEEN_IDS_HMAC_KEY must be at least 32 bytes \(it has 5\)/);
    const a = seenIdsKey({ SEEN_IDS_HMAC_KEY: '' });
    const b = seenIdsKey({ SEEN_IDS_HMAC_KEY: '' });
    expect(a.generated).toBe(true);
    expect(a.key).toHaveLength(32);
    expect(a.key.equals(b.key)).toBe(false);
  });
});

describe('keyedHash64 (SipHash-2-4 under a key derived from the seen-ids key)', () => {
  it('is SipHash-2-4: the reference vector of the SipHash paper (key 00..0f, message 00..0e)', () => {
    // Aumasson and Bernstein, "SipHash: a fast short-input PRF", appendix A: a129ca6149be45e5.
    const out = new Uint8Array(8);
    siphash24(
      Uint8Array.from({ length: 15 }, (_, i) => i),
      Uint8Array.from({ length: 16 }, (_, i) => i),
      out,
    );
    expect(Buffer.from(out).toString('hex')).toBe('e545be4961ca29a1');
  });

  it("hashes the id's UTF-8 bytes, whatever their length, under the derived key", () => {
    const derived = createHmac('sha256', KEY).update('seen-ids siphash-2-4').digest().subarray(0, 16);
    for (const id of ['', 'evt-1', 'évènement-✓', '😀'.repeat(300), 'x'.repeat(5_000), 'evt-2']) {
      const expected = Buffer.from(siphash24(Buffer.from(id, 'utf8'), derived)).toString('hex');
      const view = keyedHash64(KEY, id);
      expect(Buffer.from(view.buffer, view.byteOffset, 8).toString('hex'), JSON.stringify(id.slice(0, 12))).toBe(expected);
    }
  });
});
