/**
 * Real server: the stack's ClickHouse 18.16. `ingest clickhouse upgrade-events` there says there is
 * nothing to upgrade and leaves the legacy table as it is (the upgrade itself:
 * services/processor/src/storage/events-upgrade.chdb.test.ts).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { CLICKHOUSE_MIGRATIONS_DIR, createClickHouse, dropDatabase, migrate } from '@ingest/platform';
import { integrationEnv, testLogger, uniqueSuffix } from '@ingest/testkit';
import { runIngest } from '../ingest.js';

const env = integrationEnv();
const database = `test_cli_upgrade_${uniqueSuffix()}`;
afterAll(() => dropDatabase({ url: env.clickhouseUrl, database }));

describe('ingest clickhouse upgrade-events on 18.16', () => {
  it('says the current shape needs 24.8 and exits 0, the events table unchanged', async () => {
    await migrate({ url: env.clickhouseUrl, database, dir: CLICKHOUSE_MIGRATIONS_DIR, logger: testLogger() });
    let stdout = '';
    const code = await runIngest(['clickhouse', 'upgrade-events'], {
      env: { CLICKHOUSE_URL: env.clickhouseUrl, CLICKHOUSE_DATABASE: database, LOG_LEVEL: 'silent' },
      stdout: (t) => void (stdout += t),
      stderr: (t) => void (stdout += t),
    });
    expect({ code, stdout }).toEqual({
      code: 0,
      stdout: expect.stringMatching(
        /^nothing to upgrade: the current events shape needs ClickHouse >= 24\.8; this server \(18\.16\.[\d.]+\) keeps the 18\.16-compatible shape\n$/,
      ) as unknown,
    });
    const ch = createClickHouse({ url: env.clickhouseUrl, database });
    try {
      const [time] = await ch.query<{ type: string }>(
        "SELECT type FROM system.columns WHERE database = currentDatabase() AND table = 'events' AND name = 'event_time'",
      );
      expect(time?.type).toBe("DateTime('UTC')");
    } finally {
      await ch.close();
    }
  });
});
