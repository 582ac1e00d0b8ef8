import { describe, expect, it } from 'vitest';
import { csvHeaderProblems } from './csv-header-check.js';

describe("the browser's CSV header check", () => {
  it('accepts the spec header with extra property columns', () => {
    expect(csvHeaderProblems(['event_name', 'timestamp', 'email', 'domain', 'plan'])).toEqual([]);
    expect(csvHeaderProblems([' event_name ', 'timestamp', 'domain'])).toEqual([]);
  });

  it('names every problem: missing columns, no identity column, duplicates, empty names', () => {
    expect(csvHeaderProblems(['email', 'email', ''])).toEqual([
      'The header has no event_name column.',
      'The header has no timestamp column.',
      'The column name “email” appears more than once.',
      'Column 3 has no name.',
    ]);
    expect(csvHeaderProblems(['event_name', 'timestamp'])).toEqual(['The header needs an email or a domain column (or both).']);
  });

  it('refuses a header wider than 55 columns with one problem, as the server does', () => {
    const properties = Array.from({ length: 50 }, (_, i) => `p${i}`);
    expect(csvHeaderProblems(['event_name', 'timestamp', 'email', 'domain', 'event_id', ...properties])).toEqual([]);
    expect(csvHeaderProblems(['event_name', 'timestamp', 'email', ...Array.from({ length: 199_997 }, () => '')])).toEqual([
      'The header has 200000 columns; at most 55 are allowed (event_name, timestamp, email, domain, event_id and 50 properties).',
    ]);
  });
});
