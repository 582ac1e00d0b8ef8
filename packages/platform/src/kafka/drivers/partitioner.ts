import { randomInt } from 'node:crypto';

/**
 * Kafka's murmur2 (the Java client's, as kafkajs's DefaultPartitioner computes it), in 32-bit
 * integer arithmetic. Written here because kafkajs's own runs every step through its 64-bit
 * Long emulation and copies each key into a Buffer: together ~7% of the gateway's and the
 * processor's CPU under load. Only the low 32 bits of kafkajs's result are ever used, and those
 * depend only on the low 32 bits of each multiply and xor, so Math.imul gives the same numbers
 * (a unit test compares both on random keys): partitions stay where kafkajs put them.
 */
export function murmur2(key: string | Buffer): number {
  if (typeof key === 'string' && isAscii(key)) {
    const text = key;
    return hashBytes(text.length, (i) => text.charCodeAt(i));
  }
  const bytes = typeof key === 'string' ? Buffer.from(key, 'utf8') : key;
  return hashBytes(bytes.length, (i) => bytes[i] as number);
}

function isAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 0x7f) return false;
  return true;
}

function hashBytes(length: number, byteAt: (i: number) => number): number {
  const m = 0x5bd1e995;
  let h = 0x9747b28c ^ length;
  const length4 = length & ~3;
  for (let i = 0; i < length4; i += 4) {
    let k = byteAt(i) | (byteAt(i + 1) << 8) | (byteAt(i + 2) << 16) | (byteAt(i + 3) << 24);
    k = Math.imul(k, m);
    k ^= k >>> 24;
    k = Math.imul(k, m);
    h = Math.imul(h, m) ^ k;
  }
  // The tail bytes, as the reference's falling-through switch mixes them.
  const tail = length & 3;
  if (tail === 3) h ^= byteAt(length4 + 2) << 16;
  if (tail >= 2) h ^= byteAt(length4 + 1) << 8;
  if (tail >= 1) {
    h ^= byteAt(length4);
    h = Math.imul(h, m);
  }
  h ^= h >>> 13;
  h = Math.imul(h, m);
  h ^= h >>> 15;
  return h | 0;
}

const toPositive = (x: number) => x & 0x7fffffff;

/** The partition of a keyed message, as the Java client and kafkajs's DefaultPartitioner choose it. */
export function keyPartition(key: string | Buffer, partitions: number): number {
  return toPositive(murmur2(key)) % partitions;
}

/**
 * kafkajs's DefaultPartitioner with the murmur2 above, for every driver: an explicit partition
 * wins, a key picks `keyPartition`, and keyless messages go round-robin over the partitions that
 * have a leader. Same choices, so copies of an event still meet on one partition whichever
 * producer (gateway, job runner, an older release, another driver) wrote them.
 */
export function createPartitionChooser(): (
  topic: string,
  message: { key?: string | Buffer | null; partition?: number | null },
  leaders: readonly number[],
) => number {
  const counters = new Map<string, number>();
  return (topic, message, leaders) => {
    if (message.partition !== null && message.partition !== undefined) return message.partition;
    if (message.key !== null && message.key !== undefined) return keyPartition(message.key, leaders.length);
    const counter = (counters.get(topic) ?? randomInt(2 ** 31)) + 1;
    counters.set(topic, counter);
    const available = leaders.flatMap((leader, partition) => (leader >= 0 ? [partition] : []));
    if (available.length > 0) return available[toPositive(counter) % available.length] as number;
    return toPositive(counter) % leaders.length;
  };
}
