import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPending, CLICKHOUSE_MIGRATIONS_DIR, type ClickHouse, createLogger, loadMigrations } from '@ingest/platform';
import { EVENT_RECORD_VERSION, type EventRecord } from '@ingest/schemas';
import { CHDB_ENGINES, type ChdbEngine, chdbClickHouse, startChdb } from '@ingest/testkit/chdb';
import { EVENT_COLUMNS, fromEventRow, toEventLine } from './events-table.js';

/**
 * On each current engine (chdb: ClickHouse 26.9 and 24.8, the oldest current server supported):
 * every migration applies in order through the migration runner, and the exact bytes the storage
 * writer sends for `events` are read back equal. What chdb does not check is the HTTP client
 * path (docs/clickhouse.md, "Current-engine tests").
 */

// Hostile text: every TabSeparated escape, quotes, NUL and control characters, unicode outside
// the BMP, a lone surrogate (the UTF-8 encoder sends U+FFFD for it), SQL-looking text.
const HOSTILE = [
  'tab\there',
  'new\nline',
  'cr\rlf\r\n',
  'back\\slash\\',
  '\\t not a tab',
  'quote \' " `',
  'nul\0x\x01\x1f\x7f',
  '\\N',
  'emoji 😀 中文 é',
  'lone \ud800 surrogate',
  "\\' OR 1=1 --",
];

function record(i: number, fields: Partial<EventRecord> = {}): EventRecord {
  return {
    v: EVENT_RECORD_VERSION,
    accountId: 'acc_chdb',
    eventId: `evt-${i}`,
    eventName: 'Signed Up',
    email: 'ada@example.com',
    domain: 'example.com',
    timestampMs: Date.UTC(2026, 10, 27, 12, 0, 0, 123) + i,
    receivedAtMs: Date.UTC(2026, 10, 27, 12, 0, 1, 456) + i,
    properties: { plan: 'pro' },
    source: 'api',
    jobId: null,
    ...fields,
  };
}

const records: EventRecord[] = [
  ...HOSTILE.map((text, i) =>
    record(i, { eventId: `evt-${i}-${text}`, eventName: text, email: text, domain: text, jobId: text, properties: { text, [text]: [text, { nested: text }] } }),
  ),
  // Maximum lengths (schemas/src/event-record.ts) and 50 properties (MAX_PROPERTIES).
  record(100, {
    accountId: 'a'.repeat(64),
    eventId: 'e'.repeat(255),
    eventName: '\\'.repeat(255),
    email: `${'m'.repeat(308)}@example.com`,
    domain: 'd'.repeat(253),
    properties: Object.fromEntries(Array.from({ length: 50 }, (_, k) => [`p${k}\t${HOSTILE[k % HOSTILE.length]}`, `${'v'.repeat(200)}\n${k}`])),
    source: 'bulk',
    jobId: 'job_1',
  }),
  // The extremes of the time range the records allow.
  record(200, { timestampMs: 0, receivedAtMs: Date.UTC(2100, 0, 1) - 1, source: 'csv' }),
];

/** What a stored event reads back as: lone surrogates become U+FFFD on the way (UTF-8). */
function asStored(r: EventRecord) {
  const utf8 = (t: string) => Buffer.from(t).toString();
  const wellFormed = (v: unknown): unknown =>
    typeof v === 'string'
      ? utf8(v)
      : Array.isArray(v)
        ? v.map(wellFormed)
        : v !== null && typeof v === 'object'
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [utf8(k), wellFormed(x)]))
          : v;
  const { properties, ...rest } = {
    eventId: r.eventId,
    eventName: r.eventName,
    email: r.email === '' ? null : r.email,
    domain: r.domain === '' ? null : r.domain,
    timestampMs: r.timestampMs,
    receivedAtMs: r.receivedAtMs,
    // JSON.stringify writes a lone surrogate as a \uD800 escape, so the properties keep it.
    properties: JSON.parse(JSON.stringify(r.properties)) as unknown,
    source: r.source,
    jobId: r.jobId,
  };
  return { ...(wellFormed(rest) as object), properties };
}

describe.each(CHDB_ENGINES)('events on $name', ({ name }) => {
  let engine: ChdbEngine;
  let ch: ClickHouse;
  const insertedAtMs = Date.UTC(2026, 10, 27, 13, 0, 0);
  const lines = records.map((r) => toEventLine(r, insertedAtMs));

  beforeAll(async () => {
    engine = await startChdb(name);
    ch = await chdbClickHouse(engine, 'ingest');
  });
  afterAll(() => engine?.close());

  it('applies every migration in order, through the migration runner', async () => {
    const migrations = await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR);
    const result = await applyPending(ch, migrations, createLogger({ service: 'chdb-test', level: 'silent' }));
    expect(result.serverVersion).toMatch(name === 'chdb-2.1.1' ? /^24\.8\./ : /^26\.9\./);
    expect(result.applied).toHaveLength(migrations.length);
    const tables = (await ch.query<{ name: string }>("SELECT name FROM system.tables WHERE database = 'ingest' ORDER BY name")).map((t) => t.name);
    expect(tables).toEqual(
      expect.arrayContaining(['events', 'events_dedup', 'usage_hourly', 'usage_hourly_mv', 'events_daily', 'billing_ledger', 'audit_log']),
    );
    // Applied once: a second run has nothing to do.
    expect((await applyPending(ch, migrations, createLogger({ service: 'chdb-test', level: 'silent' }))).applied).toEqual([]);
  });

  it('stores the exact bytes the writer sends: every value, byte for byte', async () => {
    await ch.insertTabSeparated('events', EVENT_COLUMNS, lines);
    // Each String column as hex (the exact bytes stored), the rest as text.
    const hex = new Set(['account_id', 'event_id', 'event_name', 'email', 'domain', 'properties', 'job_id']);
    const rows = await ch.query<Record<string, string>>(
      `SELECT ${EVENT_COLUMNS.map((c) => (hex.has(c) ? `hex(${c}) AS ${c}` : `toString(${c}) AS ${c}`)).join(', ')} FROM events`,
    );
    expect(rows).toHaveLength(records.length);
    const byId = new Map(rows.map((r) => [r.event_id, r]));
    for (const r of records) {
      const bytes = (t: string) => Buffer.from(t).toString('hex').toUpperCase();
      const seconds = (ms: number) => new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19).replace('T', ' ');
      expect(byId.get(bytes(r.eventId)), r.eventId).toEqual({
        account_id: bytes(r.accountId),
        event_id: bytes(r.eventId),
        event_name: bytes(r.eventName),
        email: bytes(r.email ?? ''),
        domain: bytes(r.domain ?? ''),
        event_time: seconds(r.timestampMs),
        event_time_ms: String(r.timestampMs),
        received_at: seconds(r.receivedAtMs),
        received_at_ms: String(r.receivedAtMs),
        properties: bytes(JSON.stringify(r.properties)),
        source: r.source,
        job_id: bytes(r.jobId ?? ''),
        inserted_at: seconds(insertedAtMs),
      });
    }
  });

  it('gives every event back in API terms through the readers row (fromEventRow)', async () => {
    const rows = await ch.query<Parameters<typeof fromEventRow>[0] & { account_id: string }>(
      'SELECT account_id, event_id, event_name, email, domain, event_time_ms, received_at_ms, properties, source, job_id FROM events FINAL',
    );
    const byId = new Map(rows.map((r) => [r.event_id, fromEventRow(r)]));
    for (const r of records) expect(byId.get(Buffer.from(r.eventId).toString()), r.eventId).toEqual(asStored(r));
    // The second-precision columns agree with the milliseconds (event_time is what partitions use).
    const [times] = await ch.query<{ bad: string }>('SELECT countIf(toUnixTimestamp(event_time) != intDiv(event_time_ms, 1000)) AS bad FROM events');
    expect(Number(times?.bad)).toBe(0);
  });
});
