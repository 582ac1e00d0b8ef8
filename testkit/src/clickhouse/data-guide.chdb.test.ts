/**
 * No servers: the current engines in-process (chdb 26.9 and 24.8, scripts/chdb/install.sh). The
 * data guide's example queries (docs/data-guide.md), read from the page, run on the migrated
 * tables holding the guide's sample, as a read-only reader passing query parameters; each answer
 * must equal the one computed from the sample. scripts/test/data-guide.integration.test.ts
 * requires the same answers from 18.16. The page's Tables section is compared with system.columns.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EVENTS_ROW_FORMATS, type EventsShape, readEventsShape, upgradeEvents } from '@ingest/domain';
import { applyPending, CLICKHOUSE_MIGRATIONS_DIR, type ClickHouse, loadMigrations } from '@ingest/platform';
import { CHDB_ENGINES, type ChdbEngine, type ChdbEngineName, chdbClickHouse, startChdb } from '../chdb/chdb-engine.js';
import { testLogger } from '../fixtures.js';
import { expectedAnswers, GUIDE_PARAMS, guideInserts } from './data-guide-sample.fixture.js';
import {
  asText,
  documentedTables,
  guideExamples,
  readDataGuide,
  runsOn,
  serverColumns,
  tableDrift,
  type Version,
  withSetParams,
} from './data-guide.fixture.js';

// Both shapes of `events` a current server can have: current (after `ingest clickhouse
// upgrade-events`, or setup on a new deployment) on both engines, and legacy (the migrations
// alone: a deployment not yet upgraded) on the newest, the faster one.
const SETUPS: { name: ChdbEngineName; shape: EventsShape }[] = [
  ...CHDB_ENGINES.map(({ name }) => ({ name, shape: 'current' as const })),
  { name: CHDB_ENGINES[0].name, shape: 'legacy' },
];

describe.each(SETUPS)('the data guide on $name, $shape events', ({ name, shape }) => {
  let engine: ChdbEngine;
  let ch: ClickHouse;
  let version: Version;

  beforeAll(async () => {
    engine = await startChdb(name);
    ch = await chdbClickHouse(engine, 'ingest');
    const migrations = await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR);
    await applyPending(ch, migrations, testLogger());
    const [row] = await ch.query<{ v: string }>('SELECT version() AS v');
    const [major = 0, minor = 0] = (row?.v ?? '').split('.').map(Number);
    version = [major, minor];
    if (shape === 'current') await upgradeEvents(ch, { logger: testLogger(), onlyIfEmpty: true });
    expect(await readEventsShape(ch)).toBe(shape);
    const format = EVENTS_ROW_FORMATS[shape];
    for (const lines of guideInserts(format.line)) await ch.insertTabSeparated('events', format.columns, lines);
  });
  afterAll(async () => {
    await engine?.close();
  });

  it('answers every example meant for this engine as the sample says', async () => {
    const examples = guideExamples(await readDataGuide()).filter((e) => runsOn(e, version));
    expect(examples.length).toBeGreaterThanOrEqual(10);
    const expected = expectedAnswers();
    for (const example of examples) {
      // As a read-only reader (readonly = 1, like the gateway's user and a data engineer's):
      // query parameters are not settings, so it may set them.
      const rows = asText(await ch.query(`SET readonly = 1;\n${withSetParams(example.sql, GUIDE_PARAMS)}`));
      expect(rows, `${name}: example ${example.name}`).toEqual(expected[example.name]);
    }
  });

  it('has the columns the guide documents, and the dedup view every column of 18.16', async () => {
    const doc = documentedTables(await readDataGuide());
    const server = await serverColumns(ch);
    // The guide's current column is the current shape (a legacy `events` is the 18.16 one).
    if (shape === 'current') expect(tableDrift(doc, server, 'current', version)).toEqual([]);
    const view = new Set((server.get('events_dedup') ?? []).map((c) => c.name));
    expect((doc.get('events') ?? []).filter((c) => c.old !== null && !view.has(c.name)).map((c) => c.name)).toEqual([]);
  });
});
