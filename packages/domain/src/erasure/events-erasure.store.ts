import { type ClickHouse, ident, raw, serverAtLeast, sql, type SqlFragment } from '@ingest/platform';
import type { ErasureIdentifierType } from '@ingest/schemas';
import { ERASURE_COLUMNS } from './erasure-record.js';

/**
 * Deletes one identity's rows of `events` (the only table that holds events in clear), on
 * either kind of server:
 * - current servers (23.3 and later): lightweight `DELETE FROM`, which marks the rows deleted
 *   at once (reads, FINAL included, skip them; the parts are rewritten by later merges);
 * - older servers (18.16): `ALTER TABLE … DELETE`, a mutation that rewrites every part holding
 *   such rows in the background. 18.16 has no `mutations_sync`, so `waitForMutations` polls
 *   `system.mutations` (on current servers too: a lightweight delete is a mutation there as well).
 * The rollups (`usage_hourly`, `events_daily`) are not touched: they hold uniqExact states,
 * which are 128-bit hashes of the ids, emails and domains, not the values (docs/erasure.md).
 */
export const LIGHTWEIGHT_DELETE_SINCE = { major: 23, minor: 3 } as const;

export interface EventsEraser {
  /** Distinct events (by event id) of the identity in the account. */
  count(accountId: string, type: ErasureIdentifierType, value: string): Promise<number>;
  /** Issues the delete (which statement depends on the server); returns which one it used. */
  erase(accountId: string, type: ErasureIdentifierType, value: string): Promise<'delete' | 'mutation'>;
  /**
   * The same by the identifiers' hashes (the suppression list keeps no values): after a backup
   * was restored, rows of erased identities are found by hashing each row's value the way
   * identifierHash does. Returns the distinct events it deleted (0: no statement issued).
   */
  eraseByHashes(accountId: string, type: ErasureIdentifierType, hashes: readonly string[]): Promise<number>;
  /** Polls until no mutation of `events` is running; false when `timeoutMs` passed first. */
  waitForMutations(timeoutMs: number, pollMs?: number): Promise<boolean>;
}

export interface EventsEraserOptions {
  table?: string;
  /** Which statement, instead of the server's version deciding (the SQL catalogue runs both on current engines). */
  statement?: 'delete' | 'mutation';
}

export function createEventsEraser(ch: ClickHouse, options: EventsEraserOptions = {}): EventsEraser {
  const table = options.table ?? 'events';
  let version: Promise<string> | undefined;
  // Detected once per process: a server upgrade restarts nothing here, but an 18.16 statement is
  // still valid on a current server (only slower), so a stale answer is never wrong.
  const serverVersion = () => (version ??= ch.query<{ v: string }>('SELECT version() AS v').then((rows) => rows[0]?.v ?? '0'));

  // The condition is built by `sql` (values escaped) and spliced into each statement as is.
  const where = (accountId: string, type: ErasureIdentifierType, value: string): SqlFragment =>
    raw(sql`account_id = ${accountId} AND ${ident(ERASURE_COLUMNS[type])} = ${value}`);

  // identifierHash is SHA-256 of JSON.stringify([accountId, type, value]); normalised emails and
  // domains and account ids hold no character JSON escapes, so this concat is that JSON text.
  const byHashes = (accountId: string, type: ErasureIdentifierType, hashes: readonly string[]): SqlFragment => {
    const column = ident(ERASURE_COLUMNS[type]);
    return raw(
      sql`account_id = ${accountId} AND ${column} != '' AND lower(hex(SHA256(concat('["', account_id, ${`","${type}","`}, ${column}, '"]')))) IN ${hashes}`,
    );
  };

  async function issue(condition: SqlFragment): Promise<'delete' | 'mutation'> {
    const lightweight = options.statement ? options.statement === 'delete' : serverAtLeast(await serverVersion(), LIGHTWEIGHT_DELETE_SINCE);
    await ch.command(lightweight ? sql`DELETE FROM ${ident(table)} WHERE ${condition}` : sql`ALTER TABLE ${ident(table)} DELETE WHERE ${condition}`);
    return lightweight ? 'delete' : 'mutation';
  }

  async function countWhere(condition: SqlFragment): Promise<number> {
    const rows = await ch.query<{ events: string | number }>(sql`SELECT uniqExact(event_id) AS events FROM ${ident(table)} WHERE ${condition}`);
    return Number(rows[0]?.events ?? 0);
  }

  return {
    async eraseByHashes(accountId, type, hashes) {
      if (hashes.length === 0) return 0;
      const condition = byHashes(accountId, type, hashes);
      const events = await countWhere(condition);
      if (events > 0) await issue(condition);
      return events;
    },
    count: (accountId, type, value) => countWhere(where(accountId, type, value)),
    erase: (accountId, type, value) => issue(where(accountId, type, value)),
    async waitForMutations(timeoutMs, pollMs = 100) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const rows = await ch.query<{ running: string | number }>(
          sql`SELECT count() AS running FROM system.mutations WHERE database = currentDatabase() AND table = ${table} AND is_done = 0`,
        );
        if (Number(rows[0]?.running ?? 0) === 0) return true;
        if (Date.now() >= deadline) return false;
        await new Promise((resolve) => setTimeout(resolve, pollMs));
      }
    },
  };
}
