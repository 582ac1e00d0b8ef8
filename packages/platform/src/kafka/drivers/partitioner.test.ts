import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createPartitionChooser, murmur2 } from './partitioner.js';

// kafkajs's own implementation is the reference: the partitions it chose must not move.
const kafkajsMurmur2 = createRequire(import.meta.url)('kafkajs/src/producer/partitioners/default/murmur2') as (key: string | Buffer) => number;

describe('murmur2', () => {
  it('equals kafkajs for ASCII ids, UTF-8 text and raw bytes of every length', () => {
    const keys: (string | Buffer)[] = ['', 'a', 'ab', 'abc', 'abcd', 'acc_0DpNUs9DuCdiSaAs9Tup:01934f6e-7c1a-7000-8000-000000000001', 'ünïcødé:✓', '😀 emoji'];
    for (let i = 0; i < 3_000; i++) {
      const bytes = randomBytes(i % 97);
      keys.push(bytes, bytes.toString('base64'), `acc_${i}:${bytes.toString('latin1')}`);
    }
    const mismatches = keys.filter((k) => murmur2(k) !== kafkajsMurmur2(k));
    expect(mismatches).toEqual([]);
  });

  it('matches the Java client on known keys', () => {
    // From Kafka's UtilsTest / kafkajs's murmur2 tests.
    expect(murmur2('21')).toBe(-973932308);
    expect(murmur2('foobar')).toBe(-790332482);
    expect(murmur2('a-little-bit-long-string')).toBe(-985981536);
  });
});

describe('partition chooser', () => {
  // Partition 3 has no leader at the moment.
  const leaders = Array.from({ length: 12 }, (_, p) => (p === 3 ? -1 : 1));
  const pick = createPartitionChooser();

  it('keeps an explicit partition and hashes keys like kafkajs', () => {
    expect(pick('t', { key: 'x', partition: 7 }, leaders)).toBe(7);
    const key = 'acc_1:evt-1';
    expect(pick('t', { key }, leaders)).toBe((kafkajsMurmur2(key) & 0x7fffffff) % 12);
  });

  it('spreads keyless messages over partitions that have a leader', () => {
    const chosen = new Set(Array.from({ length: 44 }, () => pick('t', { key: null }, leaders)));
    expect(chosen.size).toBe(11);
    expect(chosen.has(3)).toBe(false);
  });
});
