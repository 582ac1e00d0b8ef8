import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClickHouse } from '@ingest/platform';
import { CHDB_ENGINES, type ChdbEngine, chdbClickHouse, startChdb } from '../chdb/chdb-engine.js';
import { SQL_CATALOGUE } from './sql-catalogue.js';

/** Every statement the services issue, by their own code, on each current engine (in catalogue order: the migrations first). */
describe.each(CHDB_ENGINES)('the SQL catalogue on $name', ({ name }) => {
  let engine: ChdbEngine;
  let ch: ClickHouse;
  let parseOnly: ClickHouse;
  beforeAll(async () => {
    engine = await startChdb(name);
    ch = await chdbClickHouse(engine, 'ingest');
    // Statements the in-process engine cannot execute (SQL users): its parser checks them.
    // Its reads of access tables (system.users) need grants the engine's user lacks: parsed too, answering no rows.
    parseOnly = {
      ...ch,
      command: async (q) => void (await engine.run(`EXPLAIN AST ${q}`)),
      query: async (q) => (await engine.run(`EXPLAIN AST ${q}`), []),
    };
  });
  afterAll(() => engine?.close());

  it.each(SQL_CATALOGUE.map((e) => [e.name, e] as const))('%s', async (_, entry) => {
    await expect(entry.run(entry.check === 'parse' ? parseOnly : ch)).resolves.not.toThrow();
  });

  it('reads back what the catalogue wrote (the statements did work, not just parse)', async () => {
    const [row] = await ch.query<{ events: string; audit: string; ledger: string }>(
      "SELECT (SELECT count() FROM events WHERE account_id = 'acc_cat') AS events, (SELECT count() FROM audit_log) AS audit, (SELECT count() FROM billing_ledger) AS ledger",
    );
    // chdb writes 64-bit counts as JSON numbers (the HTTP server quotes them): compare as numbers.
    expect([row?.events, row?.audit, row?.ledger].map(Number)).toEqual([1, 1, 1]);
  });
});
