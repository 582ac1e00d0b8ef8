/**
 * Real server: ClickHouse. The gateway's user (CLICKHOUSE_USER of the gateway: the local
 * stack's `ingest_reader`, profile `readonly` in users.xml; CREATE USER ... SETTINGS readonly = 1
 * on a current server) reads the service's tables and can change nothing: no INSERT, no ALTER,
 * no DROP. Its password is checked.
 */
import { createTestClickHouse, integrationEnv, type TestClickHouse } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ClickHouse, createClickHouse } from './client.js';
import { clickhouseErrorCode } from './errors.js';
import { readerUserStatements } from './reader-user.js';

let db: TestClickHouse;
let reader: ClickHouse;
const READONLY = 164;

beforeAll(async () => {
  db = await createTestClickHouse();
  await db.ch.command('CREATE TABLE probe (id UInt32, note String) ENGINE = MergeTree ORDER BY id');
  await db.ch.insert('probe', [{ id: 1, note: 'written by the processor' }]);
  const env = integrationEnv();
  reader = createClickHouse({ url: env.clickhouseUrl, username: env.clickhouseReader.user, password: env.clickhouseReader.password, database: db.database });
});

afterAll(async () => {
  await reader?.close();
  await db?.cleanup();
});

async function refusal(work: Promise<unknown>): Promise<unknown> {
  return work.then(
    () => new Error('the read-only user was allowed'),
    (err: unknown) => err,
  );
}

describe("the gateway's read-only ClickHouse user", () => {
  it('reads the tables of the database', async () => {
    expect(await reader.query<{ note: string }>('SELECT note FROM probe')).toEqual([{ note: 'written by the processor' }]);
    expect(await reader.query('SELECT count() AS n FROM events')).toEqual([{ n: '0' }]);
  });

  it('cannot INSERT, ALTER, CREATE or DROP (readonly mode, code 164)', async () => {
    const attempts = {
      insert: () => reader.insert('probe', [{ id: 2, note: 'forged' }]),
      alter: () => reader.command('ALTER TABLE probe ADD COLUMN forged String'),
      create: () => reader.command('CREATE TABLE forged (id UInt8) ENGINE = Memory'),
      drop: () => reader.command('DROP TABLE probe'),
    };
    for (const [what, attempt] of Object.entries(attempts)) {
      const err = await refusal(attempt());
      expect(clickhouseErrorCode(err), `${what}: ${String(err)}`).toBe(READONLY);
      expect(String(err), what).toMatch(/readonly/i);
    }
    // Nothing changed.
    expect(await db.ch.query('SELECT id, note FROM probe')).toEqual([{ id: 1, note: 'written by the processor' }]);
    expect(
      (await db.ch.query<{ name: string }>("SELECT name FROM system.columns WHERE database = currentDatabase() AND table = 'probe'")).map((c) => c.name),
    ).toEqual(['id', 'note']);
  });

  it('is refused with a wrong password (CLICKHOUSE_PASSWORD is used)', async () => {
    const env = integrationEnv();
    const wrong = createClickHouse({
      url: env.clickhouseUrl,
      username: env.clickhouseReader.user,
      password: `not-${env.clickhouseReader.password}`,
      database: db.database,
    });
    try {
      expect(clickhouseErrorCode(await refusal(wrong.query('SELECT 1')))).toBe(193);
    } finally {
      await wrong.close();
    }
  });

  it('on a current server, setup creates it with SQL that escapes its name and password', () => {
    expect(readerUserStatements('ingest`reader', "pa'ss\\word", 'ingest')).toEqual([
      "CREATE USER IF NOT EXISTS `ingest\\`reader` IDENTIFIED WITH sha256_password BY 'pa\\'ss\\\\word' SETTINGS readonly = 1, max_execution_time = 10",
      "ALTER USER `ingest\\`reader` IDENTIFIED WITH sha256_password BY 'pa\\'ss\\\\word' SETTINGS readonly = 1, max_execution_time = 10",
      'GRANT SELECT ON `ingest`.* TO `ingest\\`reader`',
    ]);
  });
});
