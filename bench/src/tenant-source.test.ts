import { describe, expect, it } from 'vitest';
import { acceptedToStore } from './load.js';
import { parseSizeMix, seededRandom } from './tenant-mix.js';
import { createTenantSource } from './tenant-source.js';

const keys = [
  { apiKey: 'key-a', share: 0.9, ids: 'uuidv7' as const, domain: 'a.example.com' },
  { apiKey: 'key-b', share: 0.1, ids: 'uuidv4' as const, domain: 'b.example.com' },
];

describe('tenant request source', () => {
  it('sends each account its share, with the ids its client makes, and a retry as the same body flagged as a repeat', () => {
    const source = createTenantSource({ keys, sizes: parseSizeMix('1:1,10:1'), retryShare: 0.05, eventBytes: 200, random: seededRandom(3) });
    const sent = Array.from({ length: 4_000 }, () => source.next());
    const byKey = { 'key-a': 0, 'key-b': 0 } as Record<string, number>;
    for (const r of sent) if (!r.repeat) byKey[r.apiKey] = (byKey[r.apiKey] ?? 0) + 1;
    const first = sent.filter((r) => !r.repeat).length;
    expect((byKey['key-a'] ?? 0) / first).toBeCloseTo(0.9, 1);

    const a = sent.find((r) => r.apiKey === 'key-a' && !r.repeat);
    const b = sent.find((r) => r.apiKey === 'key-b' && !r.repeat);
    const ids = (r: { body: string } | undefined) => (JSON.parse(r?.body ?? '{"events":[]}') as { events: { eventId: string; email: string }[] }).events;
    expect(ids(a)[0]?.eventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
    expect(ids(b)[0]?.eventId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-/);
    expect(ids(b)[0]?.email).toMatch(/@b\.example\.com$/);
    expect(new Set(sent.map((r) => r.events))).toEqual(new Set([1, 10]));

    const retries = sent.filter((r) => r.repeat);
    expect(source.stats().retries).toBe(retries.length);
    expect(retries.length / first).toBeGreaterThan(0.03);
    expect(retries.length / first).toBeLessThan(0.07);
    const bodies = new Set(sent.filter((r) => !r.repeat).map((r) => r.body));
    for (const r of retries) expect(bodies.has(r.body)).toBe(true);
  });

  it('counts only the first copies as rows to store', () => {
    const counters = {
      requests: 2,
      byStatus: { 202: 2 },
      eventsByStatus: { 202: 20 },
      eventsSent: 20,
      eventsAccepted: 20,
      eventsRejected: 0,
      eventsAcceptedRepeated: 10,
    };
    expect(acceptedToStore(counters)).toBe(10);
  });
});
