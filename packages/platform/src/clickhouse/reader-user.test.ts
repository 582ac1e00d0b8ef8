import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../paths.js';
import { READER_SETTINGS, readerUserStatements } from './reader-user.js';

/** The settings of one profile of users.xml, as name → text (a profile's tags stand on lines of their own, its settings on one line each). */
function profileSettings(xml: string, profile: string): Record<string, string> {
  const profiles = /<profiles>([\s\S]*?)<\/profiles>/.exec(xml)?.[1] ?? '';
  const body = new RegExp(`<${profile}>[ \\t]*\\n([\\s\\S]*?)\\n[ \\t]*</${profile}>`).exec(profiles)?.[1];
  if (body === undefined) throw new Error(`no profile <${profile}> in users.xml`);
  return Object.fromEntries([...body.matchAll(/<(\w+)>([^<]*)<\/\1>/g)].map((m) => [m[1], m[2]]));
}

describe("the gateway's read-only ClickHouse user", () => {
  const usersXml = readFileSync(join(REPO_ROOT, 'deploy/clickhouse/server/users.xml'), 'utf8');

  it('has the same settings on 18.16 (users.xml, profile readonly) as setup gives it on current servers', () => {
    const profile = profileSettings(usersXml, 'readonly');
    for (const [name, value] of Object.entries(READER_SETTINGS)) expect(profile[name], `users.xml <readonly> ${name}`).toBe(String(value));
    expect(/<ingest_reader>[\s\S]*?<profile>readonly<\/profile>/.test(usersXml), 'ingest_reader uses the readonly profile').toBe(true);
    for (const statement of readerUserStatements('ingest_reader', 'pw', 'ingest').slice(0, 2))
      expect(statement).toMatch(/ SETTINGS readonly = 1, max_execution_time = 10$/);
  });

  it('is readonly = 1, never 2 (2 would let it change every setting but readonly; 18.16 has no constraints)', () => {
    expect(READER_SETTINGS.readonly).toBe(1);
  });
});
