/**
 * Real server: ClickHouse. The repository migrations apply on this server version, each once.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { CLICKHOUSE_MIGRATIONS_DIR } from '../paths.js';
import { integrationEnv, testLogger, uniqueSuffix } from '@ingest/testkit';
import { createClickHouse } from './client.js';
import { dropDatabase, loadMigrations, migrate } from './migrations.js';

const env = integrationEnv();
const database = `test_migrate_${uniqueSuffix()}`;

afterAll(async () => {
  await dropDatabase({ url: env.clickhouseUrl, database });
});

describe('migrate', () => {
  it('applies every migration once and records it; a second run applies nothing', async () => {
    const options = { url: env.clickhouseUrl, database, dir: CLICKHOUSE_MIGRATIONS_DIR, logger: testLogger() };
    const first = await migrate(options);
    const all = await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR);
    expect([...first.applied, ...first.skipped].length).toBe(all.length);
    expect(first.serverVersion).toMatch(/^\d+\.\d+/);

    const second = await migrate(options);
    expect(second.applied).toEqual([]);
    expect(second.skipped).toEqual([]);

    const ch = createClickHouse({ url: env.clickhouseUrl, database });
    try {
      const recorded = await ch.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version');
      expect(recorded.map((r) => Number(r.version))).toEqual(all.map((m) => m.version));
      const columns = await ch.query<{ name: string; type: string }>(
        "SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'events' ORDER BY name",
      );
      expect(Object.fromEntries(columns.map((c) => [c.name, c.type]))).toMatchObject({
        account_id: 'String',
        event_id: 'String',
        event_time: "DateTime('UTC')",
        event_time_ms: 'Int64',
        received_at_ms: 'Int64',
        properties: 'String',
        job_id: 'String',
      });
    } finally {
      await ch.close();
    }
  });
});
