/**
 * Real server: the stack's ClickHouse (18.16). Migration 0007 adds `user_id`, `anonymous_id` and
 * `context` to a legacy `events` that already holds rows, and an event goes round the way the
 * services move it: the processor's TabSeparated line in (toEventLine, the bytes its writer
 * sends), the gateway's read-back out (findEvent, toStoredEvent), checked against the StoredEvent
 * schema of GET /v1/events/{eventId}.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPending, CLICKHOUSE_MIGRATIONS_DIR, type ClickHouse, createClickHouse, dropDatabase, loadMigrations } from '@ingest/platform';
import { EVENT_COLUMNS, LEGACY_BEFORE_PERSON_IDS_FORMAT, toEventLine } from '@ingest/domain';
import { compileValidator, EVENT_RECORD_VERSION, type EventRecord, StoredEvent } from '@ingest/schemas';
import { integrationEnv, testLogger, uniqueSuffix } from '@ingest/testkit';
import { createClickHouseEventStore, toStoredEvent } from './event.store.js';

const env = integrationEnv();
const database = `test_person_ids_${uniqueSuffix()}`;
const ACCOUNT = 'acc_person_ids';
let ch: ClickHouse;

function record(eventId: string, fields: Partial<EventRecord> = {}): EventRecord {
  return {
    v: EVENT_RECORD_VERSION,
    accountId: ACCOUNT,
    eventId,
    eventName: 'Page Viewed',
    email: null,
    domain: null,
    timestampMs: Date.UTC(2026, 10, 27, 12, 0, 0, 123),
    receivedAtMs: Date.UTC(2026, 10, 27, 12, 0, 1, 456),
    properties: { path: '/pricing' },
    source: 'api',
    jobId: null,
    ...fields,
  };
}

beforeAll(async () => {
  const server = createClickHouse({ url: env.clickhouseUrl });
  await server.command(`CREATE DATABASE ${database}`);
  await server.close();
  ch = createClickHouse({ url: env.clickhouseUrl, database });
});

afterAll(async () => {
  await ch?.close();
  await dropDatabase({ url: env.clickhouseUrl, database });
});

describe('userId, anonymousId and context on the legacy events table (18.16)', () => {
  it('0007 adds the columns to a table with rows, once; old rows and an older writer read empty', async () => {
    // The database as the previous release left it: every migration before 0007.
    const migrations = await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR);
    await applyPending(
      ch,
      migrations.filter((m) => m.version < 7),
      testLogger(),
    );
    const columnsBefore = await ch.query<{ name: string }>("SELECT name FROM system.columns WHERE database = currentDatabase() AND table = 'events'");
    expect(columnsBefore.map((c) => c.name)).not.toContain('user_id');
    await ch.insertTabSeparated('events', LEGACY_BEFORE_PERSON_IDS_FORMAT.columns, [
      LEGACY_BEFORE_PERSON_IDS_FORMAT.line(record('before-0007', { userId: 'u-lost' }), Date.now()),
    ]);

    const result = await applyPending(ch, migrations, testLogger());
    expect(result).toMatchObject({ applied: ['0007_events_person_ids'], serverVersion: expect.stringMatching(/^18\.16\./) });
    expect(await applyPending(ch, migrations, testLogger())).toMatchObject({ applied: [] });
    // 0007 run again on a table that has the columns (a run stopped before it was recorded): nothing to add, no error.
    const again = migrations.filter((m) => m.version === 7).map((m) => ({ ...m, version: 9007 }));
    expect(await applyPending(ch, again, testLogger())).toMatchObject({ applied: ['9007_events_person_ids'] });

    // DESCRIBE lists the columns in table order (18.16's system.columns has no position).
    const columns = await ch.query<{ name: string; type: string }>('DESCRIBE TABLE events');
    expect(columns.map((c) => c.name)).toEqual([...EVENT_COLUMNS]);
    expect(columns.filter((c) => ['user_id', 'anonymous_id', 'context'].includes(c.name)).map((c) => c.type)).toEqual(['String', 'String', 'String']);

    // The previous release's writer names the 13 columns of 0001.
    await ch.insertTabSeparated('events', LEGACY_BEFORE_PERSON_IDS_FORMAT.columns, [
      LEGACY_BEFORE_PERSON_IDS_FORMAT.line(record('older-writer', { userId: 'u-old' }), Date.now()),
    ]);
    const rows = await ch.query<{ event_id: string; user_id: string; context: string }>(
      `SELECT event_id, user_id, context FROM events_dedup WHERE account_id = '${ACCOUNT}' ORDER BY event_id`,
    );
    expect(rows).toEqual([
      { event_id: 'before-0007', user_id: '', context: '' },
      { event_id: 'older-writer', user_id: '', context: '' },
    ]);
    const store = createClickHouseEventStore(ch);
    const old = await store.findEvent(ACCOUNT, 'older-writer');
    expect(old).toBeDefined();
    expect(old).not.toHaveProperty('userId');
    expect(old).not.toHaveProperty('anonymousId');
    expect(old).not.toHaveProperty('context');
  });

  it('stores the writer line and gives userId, anonymousId and context back through the read-back, in the StoredEvent schema', async () => {
    const hostile = 'u\t1 \\ \' " \n 😀';
    const context = { library: { name: 'analytics-node', version: '2.1.0' }, ip: '203.0.113.9', page: { title: 'a\tb\\c "q"' } };
    await ch.insertTabSeparated('events', EVENT_COLUMNS, [
      toEventLine(record('segment-1', { userId: hostile, anonymousId: 'anon-1', context }), Date.now()),
      toEventLine(record('plain-1', { email: 'ada@example.com' }), Date.now()),
    ]);
    const store = createClickHouseEventStore(ch);
    const validate = compileValidator(StoredEvent, 'all');

    const segment = await store.findEvent(ACCOUNT, 'segment-1');
    expect(segment).toMatchObject({ userId: hostile, anonymousId: 'anon-1', context });
    const answered = toStoredEvent(segment ?? expect.fail('segment-1 not found'));
    expect(answered).toMatchObject({ eventId: 'segment-1', userId: hostile, anonymousId: 'anon-1', context, email: null });
    expect(validate(answered), JSON.stringify(validate.errors)).toBe(true);

    // An event without them answers as before: the three are left out, not empty.
    const plain = toStoredEvent((await store.findEvent(ACCOUNT, 'plain-1')) ?? expect.fail('plain-1 not found'));
    expect(Object.keys(plain)).not.toEqual(expect.arrayContaining(['userId']));
    expect(['userId', 'anonymousId', 'context'].filter((k) => k in plain)).toEqual([]);
    expect(validate(plain), JSON.stringify(validate.errors)).toBe(true);
  });
});
