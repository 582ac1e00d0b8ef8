import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ClickHouse, literal, REPO_ROOT } from '@ingest/platform';

/**
 * Reads docs/data-guide.md for its tests: the example queries (each lives only in the page) and
 * the Tables section (compared with system.columns), and binds the examples' query parameters
 * the way each server takes them.
 */

export const DATA_GUIDE = join(REPO_ROOT, 'docs', 'data-guide.md');

export const readDataGuide = (): Promise<string> => readFile(DATA_GUIDE, 'utf8');

/** A server version as [major, minor]; 18.16 is the local stack. */
export type Version = readonly [number, number];
export const SERVER_18_16: Version = [18, 16];

export interface GuideExample {
  name: string;
  /** The oldest server the form is for; null: every server, 18.16 included. */
  since: Version | null;
  sql: string;
}

const EXAMPLE_HEADER = /^-- example: ([a-z0-9-]+)(?: \((\d+)\.(\d+)\+\))?$/;

/** Every ```sql block of the page whose first line is `-- example: name [(N.M+)]`. */
export function guideExamples(markdown: string): GuideExample[] {
  return [...markdown.matchAll(/^```sql\n([\s\S]*?)^```$/gm)].flatMap((m) => {
    const [first = '', ...rest] = (m[1] ?? '').split('\n');
    const header = EXAMPLE_HEADER.exec(first);
    if (!header) return [];
    const since: Version | null = header[2] ? [Number(header[2]), Number(header[3])] : null;
    return [{ name: header[1] ?? '', since, sql: rest.join('\n').trim() }];
  });
}

const atLeast = (v: Version, min: Version) => v[0] > min[0] || (v[0] === min[0] && v[1] >= min[1]);

export const runsOn = (example: GuideExample, version: Version): boolean => example.since === null || atLeast(version, example.since);

const PLACEHOLDER = /\{(\w+):(\w+)\}/g;

function valueOf(params: Readonly<Record<string, string>>, name: string): string {
  const value = params[name];
  if (value === undefined) throw new Error(`the example uses {${name}:…}, which has no value`);
  return value;
}

/** 18.16 has no query parameters: each placeholder becomes a literal, as the guide tells its readers. */
export function bindAsLiterals(sql: string, params: Readonly<Record<string, string>>): string {
  return sql.replace(PLACEHOLDER, (_, name: string, type: string) => {
    const value = literal(valueOf(params, name));
    if (type === 'String') return value;
    if (type === 'Date') return `toDate(${value})`;
    throw new Error(`no literal form for {${name}:${type}}`);
  });
}

/** Current engines take the parameters themselves: `SET param_x = …` before the query (chdb, clickhouse-local). */
export function withSetParams(sql: string, params: Readonly<Record<string, string>>): string {
  const used = [...new Set([...sql.matchAll(PLACEHOLDER)].map((m) => m[1] ?? ''))];
  return [...used.map((name) => `SET param_${name} = ${literal(valueOf(params, name))};`), sql].join('\n');
}

/** Answers compared as text: chdb writes 64-bit integers as JSON numbers, the HTTP server as strings. */
export const asText = (rows: Record<string, unknown>[]): Record<string, string>[] =>
  rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, String(v)])));

export interface DocumentedColumn {
  name: string;
  /** The type on 18.16; null when 18.16 does not have the column. */
  old: string | null;
  /** The type on current servers, and from which version when not from 24.8. */
  current: string | null;
  currentSince: Version | null;
  meaning: string;
}

const unquote = (cell: string) => cell.replace(/`/g, '').trim();

function typeCell(cell: string): { type: string | null; since: Version | null } {
  const text = unquote(cell);
  if (text === '—' || text === '') return { type: null, since: null };
  const since = /^(.*) \((\d+)\.(\d+)\+\)$/.exec(text);
  return since ? { type: since[1] ?? '', since: [Number(since[2]), Number(since[3])] } : { type: text, since: null };
}

/** The column tables of the "Tables" section, by table (`### The \`name\` table` headings). */
export function documentedTables(markdown: string): Map<string, DocumentedColumn[]> {
  const section = /^## Tables\n([\s\S]*?)^## /m.exec(markdown)?.[1] ?? '';
  const tables = new Map<string, DocumentedColumn[]>();
  for (const part of section.split(/^### /m).slice(1)) {
    const name = /^[^`\n]*`(\w+)`/.exec(part)?.[1];
    const rows = part
      .split('\n')
      .filter((l) => /^\| `/.test(l))
      .map((l) => l.split('|').slice(1, -1));
    if (!name || rows.length === 0) continue;
    tables.set(
      name,
      rows.map(([col = '', old = '', current = '', meaning = '']) => {
        const c = typeCell(current);
        return { name: unquote(col), old: typeCell(old).type, current: c.type, currentSince: c.since, meaning: meaning.trim() };
      }),
    );
  }
  return tables;
}

/**
 * Tables that are not for reading (the guide says so): the migrations' record, the rollups'
 * materialized views, and what the upgrade of `events` to the current shape leaves (its record and
 * the legacy table, docs/clickhouse.md).
 */
const INTERNAL = new Set(['schema_migrations', 'events_upgrades', 'events_before_upgrade']);
export const NOT_FOR_READING = (table: string) => INTERNAL.has(table) || table.endsWith('_mv');

interface ServerColumn {
  table: string;
  name: string;
  type: string;
  default_kind: string;
}

/** Each table's columns in order, with `MATERIALIZED` / `ALIAS` after the type as the guide writes it. */
export async function serverColumns(ch: ClickHouse): Promise<Map<string, { name: string; type: string }[]>> {
  // No ORDER BY position: 18.16's system.columns has no position; every version lists a table's
  // columns in their order.
  const rows = await ch.query<ServerColumn>('SELECT table, name, type, default_kind FROM system.columns WHERE database = currentDatabase()');
  const out = new Map<string, { name: string; type: string }[]>();
  for (const r of rows) {
    const computed = r.default_kind === 'MATERIALIZED' || r.default_kind === 'ALIAS' ? ` ${r.default_kind}` : '';
    out.set(r.table, [...(out.get(r.table) ?? []), { name: r.name, type: `${r.type}${computed}` }]);
  }
  return out;
}

/**
 * The guide's column tables against a server's columns. Returns the differences, each with the
 * table's rows as they should read (the other type column and the meanings kept), to paste.
 */
export function tableDrift(
  doc: Map<string, DocumentedColumn[]>,
  server: Map<string, { name: string; type: string }[]>,
  which: 'old' | 'current',
  version: Version,
): string[] {
  const problems: string[] = [];
  const readable = [...server.keys()].filter((t) => !NOT_FOR_READING(t) && t !== 'events_dedup');
  for (const table of readable) {
    const documented = doc.get(table) ?? [];
    const expected = documented
      .filter((c) => (which === 'old' ? c.old !== null : c.current !== null && (c.currentSince === null || atLeast(version, c.currentSince))))
      .map((c) => ({ name: c.name, type: (which === 'old' ? c.old : c.current) ?? '' }));
    const actual = server.get(table) ?? [];
    if (JSON.stringify(expected) === JSON.stringify(actual)) continue;
    const rows = actual.map((a) => {
      const known = documented.find((c) => c.name === a.name);
      const old = which === 'old' ? a.type : (known?.old ?? null);
      const current = which === 'current' ? a.type : (known?.current ?? null);
      const cell = (t: string | null) => (t === null ? '—' : `\`${t}\``);
      return `| \`${a.name}\` | ${cell(old)} | ${cell(current)} | ${known?.meaning ?? '(meaning)'} |`;
    });
    problems.push(`docs/data-guide.md, table \`${table}\` (${which === 'old' ? '18.16' : `current, ${version.join('.')}`}) should read:\n${rows.join('\n')}`);
  }
  for (const table of doc.keys()) if (!server.has(table)) problems.push(`docs/data-guide.md documents \`${table}\`, which the server does not have`);
  return problems;
}
