import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  accessUserStatements,
  ALL_ROWS_POLICY,
  createTenantReaderStatements,
  newReaderPassword,
  removeTenantReaderStatements,
  rotateTenantReaderStatements,
  TENANT_READER_TABLES,
  tenantReaderName,
} from './tenant-reader.js';

const input = { accountId: 'acc_7Yx', database: 'ingest', sha256Hex: 'ab'.repeat(32) };

describe('per-account ClickHouse readers (statements)', () => {
  it('restricts every table it grants to the account: a restrictive policy beside an all-rows one for everyone else', () => {
    const sql = createTenantReaderStatements(input);
    for (const t of TENANT_READER_TABLES) {
      expect(sql).toContain(`GRANT SELECT ON \`ingest\`.\`${t}\` TO \`reader_acc_7Yx\``);
      expect(sql).toContain(
        `CREATE ROW POLICY OR REPLACE \`reader_acc_7Yx\` ON \`ingest\`.\`${t}\` AS RESTRICTIVE FOR SELECT USING account_id = 'acc_7Yx' TO \`reader_acc_7Yx\``,
      );
      expect(sql).toContain(`CREATE ROW POLICY IF NOT EXISTS \`${ALL_ROWS_POLICY}\` ON \`ingest\`.\`${t}\` AS PERMISSIVE FOR SELECT USING 1 TO ALL`);
    }
    // Nothing else is granted: no audit log, no *_mv, no database-wide grant.
    expect(sql.filter((s) => s.startsWith('GRANT'))).toHaveLength(TENANT_READER_TABLES.length);
    expect(sql.join('\n')).not.toMatch(/audit_log|\.\*/);
  });

  it('sends the password as its SHA-256 only, and the profile fixes readonly = 1 with the limits', () => {
    const [profile, user] = createTenantReaderStatements(input);
    expect(user).toContain(`IDENTIFIED WITH sha256_hash BY '${input.sha256Hex}'`);
    expect(profile).toMatch(
      /readonly = 1, max_execution_time = \d+, max_memory_usage = \d+, max_threads = \d+, max_result_rows = \d+, max_result_bytes = \d+, max_concurrent_queries_for_user = \d+$/,
    );
    expect(createTenantReaderStatements(input).at(-1)).toMatch(
      /^CREATE QUOTA OR REPLACE `reader_acc_7Yx` FOR INTERVAL 3600 second MAX queries = \d+, read_rows = \d+, execution_time = \d+ TO `reader_acc_7Yx`$/,
    );
    const { password, sha256Hex } = newReaderPassword();
    expect(password).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(sha256Hex).toBe(createHash('sha256').update(password).digest('hex'));
    expect(rotateTenantReaderStatements(input).join()).not.toContain(password);
  });

  it('removes the user, its policies, quota and profile, but not the all-rows policies others rely on', () => {
    const sql = removeTenantReaderStatements(input);
    expect(sql[0]).toBe('DROP USER IF EXISTS `reader_acc_7Yx`');
    expect(sql.filter((s) => s.startsWith('DROP ROW POLICY IF EXISTS `reader_acc_7Yx`'))).toHaveLength(TENANT_READER_TABLES.length);
    expect(sql.join('\n')).not.toContain(ALL_ROWS_POLICY);
  });

  it.each(["acc_x' OR 1=1", 'acc`x', '', 'a\nb', 'x'.repeat(101)])('refuses an account id that is not an id: %j', (accountId) => {
    expect(() => tenantReaderName(accountId)).toThrow(/account id/);
    expect(() => createTenantReaderStatements({ ...input, accountId })).toThrow(/account id/);
  });

  it("the console's access user: reader management and SELECT to hand on, its password as SHA-256, never ACCESS MANAGEMENT", () => {
    const sql = accessUserStatements('ingest_access', 'pw-in-clear', 'ingest');
    const hash = createHash('sha256').update('pw-in-clear').digest('hex');
    expect(sql.slice(0, 2)).toEqual([
      `CREATE USER IF NOT EXISTS \`ingest_access\` IDENTIFIED WITH sha256_hash BY '${hash}'`,
      `ALTER USER \`ingest_access\` IDENTIFIED WITH sha256_hash BY '${hash}'`,
    ]);
    expect(sql.join('\n')).not.toMatch(/pw-in-clear|ACCESS MANAGEMENT|ROLE ADMIN|ON \*\.\* TO .* WITH GRANT OPTION/);
    expect(sql.at(-1)).toBe('GRANT SELECT ON `ingest`.* TO `ingest_access` WITH GRANT OPTION');
  });
});
