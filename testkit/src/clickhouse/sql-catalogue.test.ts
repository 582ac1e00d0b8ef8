import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@ingest/platform';
import { CATALOGUED_CALL_SITES, SQL_CATALOGUE } from './sql-catalogue.js';

// A ClickHouse call: ch.query<...>(, admin.command(, deps.ch.insert(, insertTabSeparated(.
const CALL = /\.(query|command|insert|insertTabSeparated)\s*(<.*>)?\(/g;
// Files that use the ClickHouse client surface.
const USES_CLICKHOUSE = /\bClickHouse\b|createClickHouse/;
// Not services' SQL: the client itself; Redis scripts that mention ClickHouse in comments.
const NOT_SQL = new Set(['packages/platform/src/clickhouse/client.ts', 'packages/domain/src/allowance/allowance.scripts.ts']);

async function sources(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory() && entry.name !== 'node_modules' && entry.name !== 'web') out.push(...(await sources(path)));
    else if (entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.fixture.ts')) out.push(path);
  }
  return out;
}

describe('the SQL catalogue (testkit/src/clickhouse/sql-catalogue.ts)', () => {
  it('lists every source file that issues SQL, with its number of call sites', async () => {
    const found: Record<string, number> = {};
    for (const top of ['packages', 'services', 'tools']) {
      for (const pkg of await readdir(join(REPO_ROOT, top))) {
        for (const file of await sources(join(REPO_ROOT, top, pkg, 'src')).catch(() => [])) {
          const rel = relative(REPO_ROOT, file);
          const text = await readFile(file, 'utf8');
          if (NOT_SQL.has(rel) || !USES_CLICKHOUSE.test(text)) continue;
          const n = text.match(CALL)?.length ?? 0;
          if (n > 0) found[rel] = n;
        }
      }
    }
    // A difference names the file: add (or update) its entry in SQL_CATALOGUE and CATALOGUED_CALL_SITES.
    expect(found).toEqual(CATALOGUED_CALL_SITES);
  });

  it('has an entry exercising every listed file', () => {
    expect(new Set(SQL_CATALOGUE.map((e) => e.site))).toEqual(new Set(Object.keys(CATALOGUED_CALL_SITES)));
  });
});
