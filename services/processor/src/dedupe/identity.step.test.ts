import type { EventRecord } from '@ingest/schemas';
import { type ConsumedMessage, createMetricsRegistry } from '@ingest/platform';
import { type IdentityEntry, type IdentityMapIndex, identityOf, IDENTITY_HEADER, type PersonRef } from '@ingest/domain';
import { IDENTITY_TEST_AT as AT, identityTestRecord } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import { createIdentityStep } from './identity.step.js';

/** The index as a Map (the Redis one has its own integration tests). */
function memoryIndex(): IdentityMapIndex & { data: Map<string, IdentityEntry>; reads: number } {
  const data = new Map<string, IdentityEntry>();
  const index = {
    data,
    reads: 0,
    async get(accountId: string, refs: readonly PersonRef[]) {
      index.reads++;
      return new Map(refs.flatMap((r) => (data.has(`${accountId}|${r}`) ? [[r, data.get(`${accountId}|${r}`) as IdentityEntry] as const] : [])));
    },
    async put(accountId: string, entries: readonly (readonly [PersonRef, IdentityEntry])[]) {
      for (const [r, e] of entries) data.set(`${accountId}|${r}`, e);
    },
    async remove() {
      return 0;
    },
    async scan() {},
    async isBuilt() {
      return true;
    },
    async markBuilt() {},
  };
  return index;
}

let offset = 0;
function message(fields: Partial<EventRecord>): ConsumedMessage {
  const record = identityTestRecord({ eventId: `e${offset}`, ...fields });
  return {
    topic: 'events.raw',
    partition: 0,
    offset: String(offset++),
    key: Buffer.from(`acc_x:${record.eventId}`),
    value: Buffer.from(JSON.stringify(record)),
    headers: { [IDENTITY_HEADER]: identityOf(record) },
    timestamp: AT,
  };
}

const step = (index: IdentityMapIndex) =>
  createIdentityStep({
    index,
    builder: { ensureBuilt: async () => undefined },
    topic: 'identities',
    metrics: createMetricsRegistry('identity-step-test'),
    now: () => AT,
  });

describe('the identity step of dedupe', () => {
  it('joins a track to the identify earlier in the same batch, writes the link to the topic and, on commit, to the index', async () => {
    const index = memoryIndex();
    const identify = message({ eventName: '$identify', email: 'ada@acme.io', userId: 'u1' });
    const track = message({ userId: 'u1' });
    const batch = await step(index).prepare([identify, track]);
    expect(JSON.parse(String(batch.apply(identify)))).toMatchObject({ email: 'ada@acme.io' });
    expect(JSON.parse(String(batch.apply(track)))).toMatchObject({ email: 'ada@acme.io', identitySource: 'map' });
    expect(batch.records().map((r) => [r.key, JSON.parse(String(r.value)).email])).toEqual([['acc_x:u:u1', 'ada@acme.io']]);
    expect(index.data.size).toBe(0);
    await batch.commit();
    expect(index.data.get('acc_x|u:u1')?.email).toBe('ada@acme.io');
  });

  it('passes events of /v1/events on byte for byte without looking anything up', async () => {
    const index = memoryIndex();
    const plain = message({ email: 'bo@acme.io' });
    const batch = await step(index).prepare([plain]);
    expect(batch.apply(plain)).toBe(plain.value);
    expect(index.reads).toBe(0);
  });

  it('a refused alias is a dead letter identity_conflict; the event passes on', async () => {
    const index = memoryIndex();
    await index.put('acc_x', [
      ['u:bo', { v: 1, email: 'bo@acme.io', updatedAt: 1 }],
      ['u:cy', { v: 1, email: 'cy@acme.io', updatedAt: 1 }],
    ]);
    const alias = message({ eventName: '$alias', userId: 'cy', properties: { previousId: 'bo' } });
    const batch = await step(index).prepare([alias]);
    expect(JSON.parse(String(batch.apply(alias)))).toMatchObject({ eventId: alias.key?.toString().split(':')[1], email: 'cy@acme.io' });
    expect(batch.conflicts()).toEqual([expect.objectContaining({ message: alias, code: 'identity_conflict' })]);
    expect(batch.records()).toEqual([]);
  });
});
