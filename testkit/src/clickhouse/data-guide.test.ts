/**
 * No servers: the data guide's examples and the sample's expected answers name each other, and
 * every example is bound to one account (docs/data-guide.md, "How the examples are tested").
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { expectedAnswers, GUIDE_PARAMS } from './data-guide-sample.fixture.js';
import {
  bindAsLiterals,
  documentedTables,
  type GuideExample,
  guideExamples,
  readDataGuide,
  SERVER_18_16,
  runsOn,
  withSetParams,
} from './data-guide.fixture.js';

describe('docs/data-guide.md', () => {
  let examples: GuideExample[];
  let markdown: string;
  beforeAll(async () => {
    markdown = await readDataGuide();
    examples = guideExamples(markdown);
  });

  it('has about ten example queries, each with an expected answer, and no answer without its example', () => {
    const names = examples.map((e) => e.name);
    expect(new Set(names).size).toBe(names.length);
    expect(new Set(names)).toEqual(new Set(Object.keys(expectedAnswers())));
    expect(examples.filter((e) => runsOn(e, SERVER_18_16)).length).toBeGreaterThanOrEqual(10);
  });

  it('every expected answer has rows (an example that answers nothing proves little)', () => {
    expect(Object.entries(expectedAnswers()).filter(([, rows]) => rows.length === 0)).toEqual([]);
  });

  it('every example reads one account through the {account:String} parameter', () => {
    expect(examples.filter((e) => !e.sql.includes('account_id = {account:String}')).map((e) => e.name)).toEqual([]);
  });

  it('binds parameters as 18.16 literals and as SET param_ for current engines', () => {
    const sql = 'SELECT 1 FROM events WHERE account_id = {account:String} AND toDate(event_time) >= {from:Date} AND email = {email:String}';
    const params = { ...GUIDE_PARAMS, email: "o'k\\x" };
    expect(bindAsLiterals(sql, params)).toBe(
      "SELECT 1 FROM events WHERE account_id = 'acc_guide_a' AND toDate(event_time) >= toDate('2026-11-02') AND email = 'o\\'k\\\\x'",
    );
    expect(withSetParams(sql, params).split('\n').slice(0, 3)).toEqual([
      "SET param_account = 'acc_guide_a';",
      "SET param_from = '2026-11-02';",
      "SET param_email = 'o\\'k\\\\x';",
    ]);
    expect(() => bindAsLiterals('SELECT {nope:String}', params)).toThrow(/nope/);
  });

  it('documents the columns of every table a data engineer reads', () => {
    const tables = documentedTables(markdown);
    expect([...tables.keys()]).toEqual(['events', 'events_daily', 'usage_hourly', 'billing_ledger', 'audit_log']);
    expect(tables.get('events')?.map((c) => c.name)).toContain('event_time_ms');
    expect(tables.get('events')?.every((c) => c.meaning.length > 0)).toBe(true);
  });
});
