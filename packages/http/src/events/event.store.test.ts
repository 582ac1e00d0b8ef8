import type { ClickHouse } from '@ingest/platform';
import { type EventRowOut, fromEventRow as fromRow } from '@ingest/domain';
import { describe, expect, it } from 'vitest';
import { createClickHouseEventStore, toStoredEvent } from './event.store.js';

const row: EventRowOut = {
  event_id: 'evt-1',
  event_name: 'Signed Up',
  email: 'ada@example.com',
  domain: '',
  event_time_ms: '1768471200007',
  received_at_ms: '1768471201000',
  properties: '{"plan":"pro","nested":{"ok":true},"list":[1,null]}',
  source: 'bulk',
  job_id: '',
};

function fakeClickHouse(rows: EventRowOut[]): { ch: ClickHouse; queries: string[] } {
  const queries: string[] = [];
  const ch: ClickHouse = {
    name: 'fake',
    database: 'test',
    insert: async () => {},
    insertTabSeparated: async () => {},
    command: async () => {},
    ping: async () => true,
    close: async () => {},
    query: async <T>(q: string) => {
      queries.push(q);
      return rows as T[];
    },
  };
  return { ch, queries };
}

describe('event store', () => {
  it('maps a stored row back to API terms: empty strings are null, Int64 strings numbers, properties an object', () => {
    expect(fromRow(row)).toEqual({
      eventId: 'evt-1',
      eventName: 'Signed Up',
      email: 'ada@example.com',
      domain: null,
      timestampMs: 1768471200007,
      receivedAtMs: 1768471201000,
      properties: { plan: 'pro', nested: { ok: true }, list: [1, null] },
      source: 'bulk',
      jobId: null,
    });
    expect(fromRow({ ...row, email: '', domain: 'acme.io', job_id: 'job_1' })).toMatchObject({ email: null, domain: 'acme.io', jobId: 'job_1' });
  });

  it('refuses stored properties that are not a JSON object (a bug, not a client error)', () => {
    expect(() => fromRow({ ...row, properties: 'not json' })).toThrow(expect.objectContaining({ code: 'stored_event_corrupt' }));
    expect(() => fromRow({ ...row, properties: '[1]' })).toThrow(/not a JSON object/);
  });

  it('escapes the account and event id into one deduplicated query', async () => {
    const { ch, queries } = fakeClickHouse([row]);
    const store = createClickHouseEventStore(ch);
    const hostile = "x\\' OR 1=1 --";
    await expect(store.findEvent("acc_'1", hostile)).resolves.toMatchObject({ eventId: 'evt-1' });
    const [query] = queries;
    expect(query).toContain('FROM `events` FINAL');
    expect(query).toContain("WHERE account_id = 'acc_\\'1' AND event_id = 'x\\\\\\' OR 1=1 --'");
    expect(query).toContain('LIMIT 1');
    // The read-only user may change no setting: its profile bounds the read (readonly = 1).
    expect(query).not.toMatch(/SETTINGS/i);
  });

  it('returns undefined when no row matches', async () => {
    const { ch } = fakeClickHouse([]);
    await expect(createClickHouseEventStore(ch).findEvent('acc_1', 'nope')).resolves.toBeUndefined();
  });
});

describe('read-back response', () => {
  it('renders times as ISO 8601 UTC with milliseconds and the sync state as pending', () => {
    expect(toStoredEvent(fromRow(row))).toEqual({
      eventId: 'evt-1',
      eventName: 'Signed Up',
      email: 'ada@example.com',
      domain: null,
      timestamp: '2026-01-15T10:00:00.007Z',
      receivedAt: '2026-01-15T10:00:01.000Z',
      properties: { plan: 'pro', nested: { ok: true }, list: [1, null] },
      source: 'bulk',
      jobId: null,
      sync: { state: 'pending' },
    });
  });
});
