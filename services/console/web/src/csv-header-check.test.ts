import { describe, expect, it } from 'vitest';
import { csvHeaderProblems } from './csv-header-check.js';

describe("the browser's CSV header check", () => {
  it('accepts the spec header with extra property columns, and names that differ only in case, spaces or underscores', () => {
    expect(csvHeaderProblems(['event_name', 'timestamp', 'email', 'domain', 'plan'])).toEqual([]);
    expect(csvHeaderProblems([' event_name ', 'timestamp', 'domain'])).toEqual([]);
    expect(csvHeaderProblems(['Event Name', 'Timestamp', 'Email'])).toEqual([]);
  });

  it('names every problem: missing columns, no identity column, duplicates, empty names', () => {
    expect(csvHeaderProblems(['email', 'email', ''])).toEqual([
      'The header has no event_name column.',
      'The header has no timestamp column.',
      'The column name “email” appears 2 times (columns 1, 2).',
      'Column 3 has no name.',
    ]);
    expect(csvHeaderProblems(['event_name', 'timestamp'])).toEqual(['The header needs an email or a domain column (or both).']);
  });

  it('says what the server says of near misses and ambiguous names', () => {
    expect(csvHeaderProblems(['Event', 'Time', 'E-mail'])).toEqual([
      'The header has no event_name column; did you mean “Event”? Rename it to event_name.',
      'The header has no timestamp column; did you mean “Time”? Rename it to timestamp.',
      'The header needs an email or a domain column (or both); did you mean “E-mail”? Rename it to email.',
    ]);
    expect(csvHeaderProblems(['Event Name', 'timestamp', 'email', 'event_name'])).toEqual([
      'Columns 1 “Event Name” and 4 “event_name” both read as event_name; keep one of them.',
    ]);
  });

  it('refuses a header wider than 55 columns with one problem, as the server does', () => {
    const properties = Array.from({ length: 50 }, (_, i) => `p${i}`);
    expect(csvHeaderProblems(['event_name', 'timestamp', 'email', 'domain', 'event_id', ...properties])).toEqual([]);
    expect(csvHeaderProblems(['event_name', 'timestamp', 'email', ...Array.from({ length: 199_997 }, () => '')])).toEqual([
      'The header has 200000 columns; at most 55 are allowed (event_name, timestamp, email, domain, event_id and 50 properties).',
    ]);
  });
});
