import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPending, CLICKHOUSE_MIGRATIONS_DIR, type ClickHouse, createLogger, loadMigrations } from '@ingest/platform';
import { EVENT_RECORD_VERSION } from '@ingest/schemas';
import { CHDB_ENGINES, type ChdbEngine, chdbClickHouse, startChdb } from '@ingest/testkit/chdb';
import { EVENT_COLUMNS, toEventLine } from '../events/events-table.js';
import { createEventsEraser } from './events-erasure.store.js';
import { identifierHash } from './erasure-record.js';

/**
 * Erasure on each current engine (chdb 26.9 and 24.8): the eraser picks lightweight `DELETE`
 * by the server's version, the rows of the person are gone from plain and FINAL reads, and the
 * rows of others (another person, the same person in another account) stay. 18.16's mutation is
 * tested on the real server (services/console/src/admin/erasure.integration.test.ts).
 */
describe.each(CHDB_ENGINES)('erasure of events on $name', ({ name }) => {
  let engine: ChdbEngine;
  let ch: ClickHouse;
  beforeAll(async () => {
    engine = await startChdb(name);
    ch = await chdbClickHouse(engine, 'erasure');
    await applyPending(ch, await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR), createLogger({ service: 'erasure-chdb', level: 'silent' }));
  });
  afterAll(() => engine?.close());

  const line = (accountId: string, eventId: string, email: string, domain: string) =>
    toEventLine(
      {
        v: EVENT_RECORD_VERSION,
        accountId,
        eventId,
        eventName: 'x',
        email,
        domain,
        timestampMs: Date.UTC(2026, 10, 1),
        receivedAtMs: Date.UTC(2026, 10, 1),
        properties: {},
        source: 'api',
        jobId: null,
      },
      Date.UTC(2026, 10, 1),
    );
  const ids = async (final: boolean) =>
    (await ch.query<{ id: string }>(`SELECT concat(account_id, '/', event_id) AS id FROM events ${final ? 'FINAL' : ''} ORDER BY id`)).map((r) => r.id);

  it('deletes one person by email with a lightweight DELETE, and one company by domain', async () => {
    await ch.insertTabSeparated('events', EVENT_COLUMNS, [
      line('acc_a', 'e1', 'ada@example.com', 'example.com'),
      line('acc_a', 'e2', 'ada@example.com', 'example.com'),
      line('acc_a', 'e3', 'bob@example.com', 'example.com'),
      line('acc_a', 'e4', 'eve@gone.example', 'gone.example'),
      line('acc_b', 'e1', 'ada@example.com', 'example.com'),
    ]);
    const eraser = createEventsEraser(ch);
    expect(await eraser.count('acc_a', 'email', 'ada@example.com')).toBe(2);
    expect(await eraser.erase('acc_a', 'email', 'ada@example.com')).toBe('delete');
    expect(await eraser.waitForMutations(30_000)).toBe(true);
    expect(await eraser.count('acc_a', 'email', 'ada@example.com')).toBe(0);
    expect(await eraser.erase('acc_a', 'domain', 'gone.example')).toBe('delete');
    expect(await eraser.waitForMutations(30_000)).toBe(true);
    for (const final of [false, true]) expect(await ids(final)).toEqual(['acc_a/e3', 'acc_b/e1']);
  });

  it('finds rows by the hash the suppression list keeps (a restore brought them back)', async () => {
    await ch.insertTabSeparated('events', EVENT_COLUMNS, [
      line('acc_a', 'r1', 'ada@example.com', 'example.com'),
      line('acc_a', 'r2', 'zoë@bücher.example', 'xn--bcher-kva.example'),
    ]);
    const eraser = createEventsEraser(ch);
    const hashes = [identifierHash('acc_a', 'email', 'ada@example.com'), identifierHash('acc_a', 'email', 'zoë@bücher.example')];
    expect(await eraser.eraseByHashes('acc_a', 'email', hashes)).toBe(2);
    expect(await eraser.waitForMutations(30_000)).toBe(true);
    expect(await ids(true)).toEqual(['acc_a/e3', 'acc_b/e1']);
  });
});
