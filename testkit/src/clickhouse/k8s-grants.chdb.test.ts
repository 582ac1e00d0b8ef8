import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHDB_ENGINES, type ChdbEngine, startChdb } from '../chdb/chdb-engine.js';

/**
 * The grants deploy/k8s/README.md tells operators to give the writing user `ingest` (setup, the
 * processor, the console's erasures): each statement parses on the current engines (chdb has no
 * SQL users, so they are parsed, not run), and they cover ALTER DELETE on events (erasures) and
 * CLUSTER (ON CLUSTER migrations).
 */
function grantStatements(): string[] {
  const readme = readFileSync(join(REPO_ROOT, 'deploy/k8s/README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('### The ClickHouse users and their grants'));
  const block = /```sql\n([\s\S]*?)```/.exec(section)?.[1] ?? '';
  return block
    .split('\n')
    .filter((line) => !line.trim().startsWith('--'))
    .join('\n')
    .split(/;\s*$/m)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

describe('the writing user grants of deploy/k8s/README.md', () => {
  it('cover ALTER (ALTER DELETE for erasures) on the database and CLUSTER', () => {
    const statements = grantStatements();
    expect(statements.length).toBeGreaterThanOrEqual(5);
    expect(statements.some((s) => /^GRANT [^;]*\bALTER\b[^;]* ON ingest\.\* TO ingest$/.test(s))).toBe(true);
    expect(statements).toContain('GRANT CLUSTER ON *.* TO ingest');
  });

  describe.each(CHDB_ENGINES)('on $name', ({ name }) => {
    let engine: ChdbEngine;
    beforeAll(async () => {
      engine = await startChdb(name);
    });
    afterAll(() => engine?.close());

    it('parse', async () => {
      for (const statement of grantStatements()) await engine.run(`EXPLAIN AST ${statement}`);
    });
  });
});
