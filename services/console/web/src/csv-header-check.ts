/**
 * The browser's early check of a CSV header, so an owner learns of a wrong file before
 * uploading it. The same rules as the server's csv-header.ts (@ingest/http), which stays the authority: a
 * file that passes here is still checked there.
 */
/** The server's MAX_CSV_COLUMNS: event_name, timestamp, email, domain, event_id and 50 properties. */
const MAX_COLUMNS = 55;

export function csvHeaderProblems(header: readonly string[]): string[] {
  // One problem for a header too wide, as the server says it (and no list as long as the header).
  if (header.length > MAX_COLUMNS)
    return [`The header has ${header.length} columns; at most ${MAX_COLUMNS} are allowed (event_name, timestamp, email, domain, event_id and 50 properties).`];
  const names = header.map((h) => h.trim());
  const problems: string[] = [];
  const has = (n: string) => names.includes(n);
  if (!has('event_name')) problems.push('The header has no event_name column.');
  if (!has('timestamp')) problems.push('The header has no timestamp column.');
  if (!has('email') && !has('domain')) problems.push('The header needs an email or a domain column (or both).');
  const seen = new Set<string>();
  for (const n of names) {
    if (n !== '' && seen.has(n)) problems.push(`The column name “${n}” appears more than once.`);
    seen.add(n);
  }
  names.forEach((n, i) => {
    if (n === '') problems.push(`Column ${i + 1} has no name.`);
  });
  return [...new Set(problems)];
}
