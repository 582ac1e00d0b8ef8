import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPending, CLICKHOUSE_MIGRATIONS_DIR, type ClickHouse, createLogger, loadMigrations } from '@ingest/platform';
import { EVENT_RECORD_VERSION, type EventRecord } from '@ingest/schemas';
import { CHDB_ENGINES, type ChdbEngine, chdbClickHouse, startChdb } from '@ingest/testkit/chdb';
import { EVENT_COLUMNS, EVENTS_ROW_FORMATS, type EventsShape, fromEventRow, LEGACY_BEFORE_PERSON_IDS_FORMAT, toEventLine } from './events-table.js';
import { readEventsShape, upgradeEvents } from './events-upgrade.js';

/**
 * On each current engine (chdb: ClickHouse 26.9 and 24.8, the oldest current server supported):
 * every migration applies in order through the migration runner, and the exact bytes the storage
 * writer sends for `events` are read back equal, in both shapes of the table: the legacy one
 * (what the migrations make, as on 18.16) and the current one (after `upgradeEvents`, as a new
 * deployment on a current server has it). What chdb does not check is the HTTP client path
 * (docs/clickhouse.md, "Current-engine tests").
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
    record(i, {
      eventId: `evt-${i}-${text}`,
      eventName: text,
      email: text,
      domain: text,
      jobId: text,
      properties: { text, [text]: [text, { nested: text }] },
      // The Segment-compatible intake's fields (both shapes; the legacy table since migration 0007).
      userId: text,
      anonymousId: `a-${text}`,
      context: { ip: '203.0.113.9', page: { title: text } },
    }),
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
  record(300),
  // Properties the JSON type cannot hold as such (a key that repeats a nested path).
  record(400, { properties: { a: { b: 1 }, 'a.b': 2 } }),
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
    ...(r.userId ? { userId: r.userId } : {}),
    ...(r.anonymousId ? { anonymousId: r.anonymousId } : {}),
  };
  // context is JSON text like the properties: a lone surrogate stays an escape, so it comes back as sent.
  const context = r.context === undefined ? {} : { context: JSON.parse(JSON.stringify(r.context)) as unknown };
  return { ...(wellFormed(rest) as object), properties, ...context };
}

const logger = createLogger({ service: 'chdb-test', level: 'silent' });

describe.each(CHDB_ENGINES)('events on $name', ({ name, serverMajor }) => {
  let engine: ChdbEngine;
  const insertedAtMs = Date.UTC(2026, 10, 27, 13, 0, 0, 789);

  beforeAll(async () => {
    engine = await startChdb(name);
  });
  afterAll(() => engine?.close());

  it('applies every migration in order, through the migration runner', async () => {
    const ch = await chdbClickHouse(engine, 'ingest');
    const migrations = await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR);
    const result = await applyPending(ch, migrations, logger);
    expect(result.serverVersion).toMatch(name === 'chdb-2.1.1' ? /^24\.8\./ : /^26\.9\./);
    // 0006 (the JSON type, 25.8+) is for 26.9 only.
    expect(result.skipped).toEqual(serverMajor >= 25 ? [] : ['0006_events_properties_json']);
    expect(result.applied).toHaveLength(migrations.length - result.skipped.length);
    const tables = (await ch.query<{ name: string }>("SELECT name FROM system.tables WHERE database = 'ingest' ORDER BY name")).map((t) => t.name);
    expect(tables).toEqual(
      expect.arrayContaining(['events', 'events_dedup', 'usage_hourly', 'usage_hourly_mv', 'events_daily', 'billing_ledger', 'audit_log']),
    );
    // Applied once: a second run has nothing to do.
    expect(await applyPending(ch, migrations, logger)).toMatchObject({ applied: [], skipped: [] });
  });

  it('adds the person columns (0007) to a legacy table with rows: old rows read empty, an older writer still inserts, events_dedup shows them', async () => {
    const ch = await chdbClickHouse(engine, 'ingest_0007');
    const migrations = await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR);
    await applyPending(
      ch,
      migrations.filter((m) => m.version < 7),
      logger,
    );
    const segment = record(1, { eventId: 'before-0007', userId: 'u1', anonymousId: 'a1', context: { library: { name: 'analytics-node' } } });
    await ch.insertTabSeparated('events', LEGACY_BEFORE_PERSON_IDS_FORMAT.columns, [LEGACY_BEFORE_PERSON_IDS_FORMAT.line(segment, insertedAtMs)]);
    expect(await applyPending(ch, migrations, logger)).toMatchObject({ applied: ['0007_events_person_ids'] });
    // The previous release's writer names the 13 columns of 0001: the new ones get ''.
    await ch.insertTabSeparated('events', LEGACY_BEFORE_PERSON_IDS_FORMAT.columns, [
      LEGACY_BEFORE_PERSON_IDS_FORMAT.line({ ...segment, eventId: 'older-writer' }, insertedAtMs),
    ]);
    await ch.insertTabSeparated('events', EVENT_COLUMNS, [toEventLine({ ...segment, eventId: 'this-writer' }, insertedAtMs)]);
    const rows = await ch.query<{ event_id: string; user_id: string; anonymous_id: string; context: string }>(
      'SELECT event_id, user_id, anonymous_id, context FROM events_dedup ORDER BY event_id',
    );
    expect(rows).toEqual([
      { event_id: 'before-0007', user_id: '', anonymous_id: '', context: '' },
      { event_id: 'older-writer', user_id: '', anonymous_id: '', context: '' },
      { event_id: 'this-writer', user_id: 'u1', anonymous_id: 'a1', context: '{"library":{"name":"analytics-node"}}' },
    ]);
    // The runner's own check: the columns are there, so a run of 0007 again sends no ALTER.
    const columns = await ch.query<{ name: string }>("SELECT name FROM system.columns WHERE database = 'ingest_0007' AND table = 'events' ORDER BY position");
    // (properties_json, 26.9 only, is a MATERIALIZED column after them.)
    expect(
      columns
        .map((c) => c.name)
        .filter((c) => c !== 'properties_json')
        .slice(-4),
    ).toEqual(['user_id', 'anonymous_id', 'context', 'inserted_at']);
  });

  describe.each(['legacy', 'current'] as const)('%s shape', (shape: EventsShape) => {
    let ch: ClickHouse;
    const format = EVENTS_ROW_FORMATS[shape];
    const lines = records.map((r) => format.line(r, insertedAtMs));

    beforeAll(async () => {
      // legacy: the database the first test migrated; current: a new one.
      ch = await chdbClickHouse(engine, shape === 'legacy' ? 'ingest' : 'ingest_current');
      await applyPending(ch, await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR), logger);
      // A new deployment on a current server: setup upgrades the still empty table at once.
      if (shape === 'current') expect(await upgradeEvents(ch, { logger })).toMatchObject({ status: 'upgraded', partitions: 0, rows: 0 });
      expect(await readEventsShape(ch)).toBe(shape);
    });

    it('stores the exact bytes the writer sends: every value, byte for byte', async () => {
      await ch.insertTabSeparated('events', format.columns, lines);
      // Each String column as hex (the exact bytes stored), the rest as text; the legacy column
      // names on both shapes (event_time_ms and received_at_ms are ALIAS columns of the current one).
      const hex = new Set(['account_id', 'event_id', 'event_name', 'email', 'domain', 'properties', 'job_id', 'user_id', 'anonymous_id', 'context']);
      const rows = await ch.query<Record<string, string>>(
        `SELECT ${EVENT_COLUMNS.map((c) => (hex.has(c) ? `hex(${c}) AS ${c}` : `toString(${c}) AS ${c}`)).join(', ')} FROM events`,
      );
      expect(rows).toHaveLength(records.length);
      const byId = new Map(rows.map((r) => [r.event_id, r]));
      // Legacy: whole seconds beside the *_ms columns; current: the milliseconds in the times.
      const time = (ms: number) =>
        new Date(shape === 'current' ? ms : Math.floor(ms / 1000) * 1000)
          .toISOString()
          .slice(0, shape === 'current' ? 23 : 19)
          .replace('T', ' ');
      for (const r of records) {
        const bytes = (t: string) => Buffer.from(t).toString('hex').toUpperCase();
        expect(byId.get(bytes(r.eventId)), r.eventId).toEqual({
          account_id: bytes(r.accountId),
          event_id: bytes(r.eventId),
          event_name: bytes(r.eventName),
          email: bytes(r.email ?? ''),
          domain: bytes(r.domain ?? ''),
          event_time: time(r.timestampMs),
          event_time_ms: String(r.timestampMs),
          received_at: time(r.receivedAtMs),
          received_at_ms: String(r.receivedAtMs),
          properties: bytes(JSON.stringify(r.properties)),
          source: r.source,
          job_id: bytes(r.jobId ?? ''),
          inserted_at: time(insertedAtMs),
          user_id: bytes(r.userId ?? ''),
          anonymous_id: bytes(r.anonymousId ?? ''),
          context: bytes(r.context === undefined ? '' : JSON.stringify(r.context)),
        });
      }
    });

    it('gives every event back in API terms through the readers row (fromEventRow), also through events_dedup', async () => {
      for (const from of ['events FINAL', 'events_dedup']) {
        const rows = await ch.query<Parameters<typeof fromEventRow>[0] & { account_id: string }>(
          `SELECT account_id, event_id, event_name, email, domain, event_time_ms, received_at_ms, properties, source, job_id, user_id, anonymous_id, context FROM ${from}`,
        );
        const byId = new Map(rows.map((r) => [r.event_id, fromEventRow(r)]));
        expect(byId.size, from).toBe(records.length);
        for (const r of records) expect(byId.get(Buffer.from(r.eventId).toString()), r.eventId).toEqual(asStored(r));
      }
      // The times agree with the milliseconds (event_time is what partitions use).
      const [times] = await ch.query<{ bad: string }>('SELECT countIf(toUnixTimestamp(event_time) != intDiv(event_time_ms, 1000)) AS bad FROM events');
      expect(Number(times?.bad)).toBe(0);
    });

    it('fills the rollups from the inserted rows', async () => {
      const [usage] = await ch.query<{ events: string }>("SELECT uniqExactMerge(events) AS events FROM usage_hourly WHERE account_id = 'acc_chdb'");
      const [daily] = await ch.query<{ events: string }>("SELECT uniqExactMerge(events) AS events FROM events_daily WHERE account_id = 'acc_chdb'");
      const mine = records.filter((r) => r.accountId === 'acc_chdb').length;
      expect([Number(usage?.events), Number(daily?.events)]).toEqual([mine, mine]);
    });

    if (shape === 'current') {
      it('uses the bloom filters for the read-back by event_id and the lookups by email and domain', async () => {
        for (const [column, index] of [
          ['event_id', 'event_id_bloom'],
          ['email', 'email_bloom'],
          ['domain', 'domain_bloom'],
        ] as const) {
          const plan = await engine.text(`EXPLAIN indexes = 1 SELECT count() FROM ingest_current.events WHERE account_id = 'acc_chdb' AND ${column} = 'x'`);
          expect(plan, column).toContain(index);
        }
      });
    }

    if (shape === 'current' && serverMajor >= 25) {
      it('computes properties_json from the text on 25.8 and later, and an empty one where the JSON type cannot hold the properties', async () => {
        const [row] = await ch.query<{ plan: string }>("SELECT toString(properties_json.plan) AS plan FROM events WHERE event_id = 'evt-300'");
        const [lone] = await ch.query<{ json: string }>("SELECT toString(properties_json) AS json FROM events WHERE properties LIKE '%\\\\ud800%' LIMIT 1");
        expect(row?.plan).toBe('pro');
        // Text the JSON type cannot hold (a lone surrogate escape) stores an empty object instead
        // of failing the insert; the raw text keeps the properties (checked above).
        expect(lone?.json).toBe('{}');
        const [paths] = await ch.query<{ json: string; text: string }>(
          "SELECT toString(properties_json) AS json, properties AS text FROM events WHERE event_id = 'evt-400'",
        );
        expect(paths).toEqual({ json: '{}', text: '{"a":{"b":1},"a.b":2}' });
      });
    }
  });
});
