/**
 * Real server: the stack's ClickHouse 18.16, beside the current engines in-process (chdb 26.9
 * and 24.8, installed by scripts/chdb/install.sh, which npm test runs before this project).
 * Every statement of the SQL catalogue that 18.16 is meant to run runs there, and the SQL
 * examples of docs/clickhouse.md give the same answers on all three (the data engineers' example
 * queries of docs/data-guide.md have tests of their own: data-guide.*.test.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENT_COLUMNS, toEventLine } from '@ingest/domain';
import { applyPending, CLICKHOUSE_MIGRATIONS_DIR, type ClickHouse, createClickHouse, dropDatabase, loadMigrations, REPO_ROOT } from '@ingest/platform';
import { EVENT_RECORD_VERSION, type EventRecord } from '@ingest/schemas';
import { integrationEnv, testLogger, uniqueSuffix } from '@ingest/testkit';
import { CHDB_ENGINES, type ChdbEngine, chdbClickHouse, startChdb } from '@ingest/testkit/chdb';
import { SQL_CATALOGUE } from '@ingest/testkit/sql-catalogue';

const env = integrationEnv();
const ACCOUNT = 'acc_guide';

/** The ```sql blocks of docs/clickhouse.md, one statement each, on the test's database and account. */
async function guideQueries(): Promise<string[]> {
  const text = await readFile(join(REPO_ROOT, 'docs', 'clickhouse.md'), 'utf8');
  const blocks = [...text.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  return blocks
    .flatMap((b) => b.split(/;\s*$/m))
    .map((q) =>
      q
        .split('\n')
        .filter((l) => !l.trim().startsWith('--'))
        .join('\n')
        .trim(),
    )
    .filter((q) => q.length > 0)
    .map((q) => q.replaceAll('ingest.', '').replaceAll("'acc_...'", `'${ACCOUNT}'`));
}

/** A realistic handful: three event names, people of two companies, a plan property, redelivered copies. */
function sample(nowMs: number): string[] {
  const names = ['Signed Up', 'Page Viewed', 'Plan Changed'];
  const lines: string[] = [];
  for (let i = 0; i < 300; i++) {
    const atMs = nowMs - (i % 20) * 3_600_000 * 7 - i * 1000;
    const record: EventRecord = {
      v: EVENT_RECORD_VERSION,
      accountId: ACCOUNT,
      eventId: `evt-${i}`,
      eventName: names[i % 3] ?? 'Signed Up',
      email: i % 5 === 0 ? null : `person${i % 17}@${i % 2 ? 'a' : 'b'}.example`,
      domain: i % 5 === 0 ? null : `${i % 2 ? 'a' : 'b'}.example`,
      timestampMs: atMs,
      receivedAtMs: atMs + 500,
      properties: { plan: ['free', 'pro', 'growth'][i % 4] ?? 'none', n: i },
      source: 'api',
      jobId: null,
    };
    lines.push(toEventLine(record, nowMs));
    // A redelivered copy, inserted again later: FINAL and the rollups count it once.
    if (i % 10 === 0) lines.push(toEventLine(record, nowMs + 1000));
  }
  return lines;
}

/** Answers compared as text: chdb writes 64-bit integers as JSON numbers, the HTTP server as strings. */
const asText = (rows: Record<string, unknown>[]) => rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, String(v)])));

describe('ClickHouse 18.16 and the current engines', () => {
  const database = `test_engines_${uniqueSuffix()}`;
  const nowMs = Math.floor(Date.now() / 3_600_000) * 3_600_000 - 3_600_000;
  let old: ClickHouse;
  const current: { engine: ChdbEngine; ch: ClickHouse }[] = [];

  beforeAll(async () => {
    const server = createClickHouse({ url: env.clickhouseUrl });
    await server.command(`CREATE DATABASE IF NOT EXISTS ${database}`);
    await server.close();
    old = createClickHouse({ url: env.clickhouseUrl, database });
    for (const { name } of CHDB_ENGINES) {
      const engine = await startChdb(name);
      current.push({ engine, ch: await chdbClickHouse(engine, 'ingest') });
    }
  });
  afterAll(async () => {
    await old?.close();
    await dropDatabase({ url: env.clickhouseUrl, database });
    for (const c of current) await c.engine.close();
  });

  it('runs every catalogued statement meant for 18.16 there', async () => {
    for (const entry of SQL_CATALOGUE.filter((e) => e.servers !== 'current')) {
      await expect(entry.run(old), entry.name).resolves.not.toThrow();
    }
    const [row] = await old.query<{ n: string }>("SELECT count() AS n FROM events WHERE account_id = 'acc_cat'");
    expect(row?.n).toBe('1');
  });

  it('answers the SQL examples of docs/clickhouse.md the same on 18.16, 26.9 and 24.8', async () => {
    const queries = await guideQueries();
    expect(queries.length).toBeGreaterThanOrEqual(5);
    const lines = sample(nowMs);
    await old.insertTabSeparated('events', EVENT_COLUMNS, lines);
    for (const c of current) {
      await applyPending(c.ch, await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR), testLogger());
      await c.ch.insertTabSeparated('events', EVENT_COLUMNS, lines);
    }
    for (const query of queries) {
      const expected = asText(await old.query(query));
      expect(expected.length, `the guide query returns rows on 18.16: ${query}`).toBeGreaterThan(0);
      for (const c of current) expect(asText(await c.ch.query(query)), `${c.engine.name}: ${query}`).toEqual(expected);
    }
  });
});
