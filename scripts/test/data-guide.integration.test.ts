/**
 * Real server: the stack's ClickHouse 18.16. The data guide's example queries
 * (docs/data-guide.md), read from the page, run on a migrated database holding the guide's
 * sample, as the read-only user, with the parameters substituted as literals (18.16 has no query
 * parameters); each answer must equal the one computed from the sample, as it must on the current
 * engines (testkit/src/clickhouse/data-guide.chdb.test.ts). The page's Tables section is compared
 * with system.columns.
 */
import { describe, expect, it } from 'vitest';
import { EVENT_COLUMNS } from '@ingest/domain';
import { createReaderClickHouse, useTestClickHouse } from '@ingest/testkit';
import {
  asText,
  bindAsLiterals,
  documentedTables,
  expectedAnswers,
  GUIDE_PARAMS,
  guideExamples,
  guideInserts,
  readDataGuide,
  runsOn,
  SERVER_18_16,
  serverColumns,
  tableDrift,
} from '@ingest/testkit/data-guide';

describe('the data guide on ClickHouse 18.16', () => {
  const clickhouse = useTestClickHouse();

  it('answers every example meant for 18.16 as the sample says', async () => {
    const [row] = await clickhouse.ch.query<{ v: string }>('SELECT version() AS v');
    expect(row?.v).toMatch(/^18\.16\./);
    for (const lines of guideInserts()) await clickhouse.ch.insertTabSeparated('events', EVENT_COLUMNS, lines);
    const examples = guideExamples(await readDataGuide()).filter((e) => runsOn(e, SERVER_18_16));
    expect(examples.length).toBeGreaterThanOrEqual(10);
    const expected = expectedAnswers();
    const reader = createReaderClickHouse(clickhouse.database);
    try {
      for (const example of examples) {
        const rows = asText(await reader.query(bindAsLiterals(example.sql, GUIDE_PARAMS)));
        expect(rows, `18.16: example ${example.name}`).toEqual(expected[example.name]);
      }
    } finally {
      await reader.close();
    }
  });

  it('has the columns the guide documents, and the dedup view every column of events', async () => {
    const doc = documentedTables(await readDataGuide());
    const server = await serverColumns(clickhouse.ch);
    expect(tableDrift(doc, server, 'old', SERVER_18_16)).toEqual([]);
    const view = new Set((server.get('events_dedup') ?? []).map((c) => c.name));
    expect((doc.get('events') ?? []).filter((c) => c.old !== null && !view.has(c.name)).map((c) => c.name)).toEqual([]);
  });
});
