import { describe, expect, it } from 'vitest';
import { normalizeColumnName, resolveCsvColumns, specColumnOf, suggestCsvColumn } from './csv-columns.js';

describe('CSV column names', () => {
  it('reads a name as a spec column when it differs only in case, spaces or underscores', () => {
    expect(['Event Name', 'EVENT_NAME', 'eventName', ' event  name ', 'Event_Id', 'E-Mail'].map((n) => specColumnOf(n) ?? null)).toEqual([
      'event_name',
      'event_name',
      'event_name',
      'event_name',
      'event_id',
      null,
    ]);
    expect(normalizeColumnName('Time_Stamp ')).toBe('timestamp');
  });

  it('suggests a column for near misses and aliases, and nothing for unrelated or very long names', () => {
    expect(
      ['E-Mail', 'evnt_name', 'Timestmp', 'created_at', 'Website', 'plan', 'amount', 'x'.repeat(1_000_000)].map((n) => suggestCsvColumn(n) ?? null),
    ).toEqual(['email', 'event_name', 'timestamp', 'timestamp', 'domain', null, null, null]);
  });

  it('lays out a header: mapped columns at their first position, every other column a property as written', () => {
    expect(resolveCsvColumns(['Event Name', ' Plan ', 'Timestamp', 'Domain'])).toEqual({
      columns: { event_name: 0, timestamp: 2, domain: 3 },
      properties: [[1, 'Plan']],
      problems: [],
    });
  });
});
