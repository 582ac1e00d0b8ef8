import { readAllowanceHistory } from '@ingest/console';
import {
  AUDIT_TABLE,
  createAuditReader,
  createEventsEraser,
  createLedgerReader,
  LEDGER_TABLE,
  toAuditRecord,
  toAuditRow,
  toLedgerRow,
  EVENT_COLUMNS,
  toEventLine,
} from '@ingest/domain';
import { createClickHouseEventStore } from '@ingest/http';
import { applyPending, CLICKHOUSE_MIGRATIONS_DIR, type ClickHouse, createLogger, loadMigrations, readerUserStatements } from '@ingest/platform';
import { createClickHouseWriter, createExactCountsStore } from '@ingest/processor';
import { EVENT_RECORD_VERSION } from '@ingest/schemas';
import { Registry } from 'prom-client';

/**
 * Every SQL statement the services issue, in one place, each issued by the services' own code
 * with sample parameters (hostile text where the code takes text). The current-engine tests run
 * them all on ClickHouse 26.9 and 24.8 (sql-catalogue.chdb.test.ts), and a unit test
 * (sql-catalogue.test.ts) fails when a source file issues SQL from a call site this catalogue
 * does not list: a new query comes with its entry here.
 */
export interface CatalogueEntry {
  name: string;
  /** The source file whose call sites the entry exercises. */
  site: string;
  /** Issues the statements through `ch`, a client already in a database the migrations made. */
  run(ch: ClickHouse): Promise<unknown>;
  /**
   * parse: the statement needs what an in-process engine lacks (SQL users and grants): it is
   * checked by the engine's parser (EXPLAIN AST) only.
   */
  check?: 'parse';
  /** current: issued only on servers of 20.4 and later (setup's SQL users); 18.16 never sees it. */
  servers?: 'current';
}

const HOSTILE = "it's \\' OR 1=1 -- \t\n\0 😀 \\x41";
const logger = createLogger({ service: 'sql-catalogue', level: 'silent' });
const T0 = Date.UTC(2026, 10, 1, 12);

export const SQL_CATALOGUE: readonly CatalogueEntry[] = [
  {
    name: 'migration runner: schema_migrations, version(), applied versions, every migration, the record of each',
    site: 'packages/platform/src/clickhouse/migrations.ts',
    run: async (ch) => applyPending(ch, await loadMigrations(CLICKHOUSE_MIGRATIONS_DIR), logger),
  },
  {
    name: 'storage writer: the events rows as TabSeparated',
    site: 'services/processor/src/storage/clickhouse.writer.ts',
    run: (ch) =>
      createClickHouseWriter({ ch, table: 'events', columns: EVENT_COLUMNS, logger, metrics: new Registry() }).write(
        [
          toEventLine(
            {
              v: EVENT_RECORD_VERSION,
              accountId: 'acc_cat',
              eventId: HOSTILE,
              eventName: HOSTILE,
              email: 'ada@example.com',
              domain: 'example.com',
              timestampMs: T0,
              receivedAtMs: T0,
              properties: { plan: HOSTILE },
              source: 'api',
              jobId: null,
            },
            T0,
          ),
        ],
        { heartbeat: () => Promise.resolve(), shouldContinue: () => false },
      ),
  },
  {
    name: 'topic copier: audit_log and billing_ledger rows as JSONEachRow',
    site: 'services/processor/src/topic-copier.ts',
    run: async (ch) => {
      const audit = toAuditRecord({
        at: new Date(T0),
        actor: { type: 'admin', name: HOSTILE, role: 'admin' },
        action: 'account.create',
        accountId: 'acc_cat',
        target: HOSTILE,
        ip: '127.0.0.1',
        requestId: 'req-1',
        after: { note: HOSTILE },
      });
      await ch.insert(AUDIT_TABLE, [toAuditRow(audit)]);
      await ch.insert(LEDGER_TABLE, [
        toLedgerRow({
          v: 1,
          kind: 'period_closed',
          accountId: 'acc_cat',
          period: '202610',
          at: '2026-11-01T00:00:00.000Z',
          plan: 'pro',
          previousPlan: null,
          limit: 1_000_000,
          eventsCharged: 12,
          overageRefused: 0,
          recordedAt: '2026-11-01T00:00:01.000Z',
        }),
      ]);
    },
  },
  {
    name: 'event read-back (FINAL) and the event debugger (argMax, name and identity filters)',
    site: 'packages/http/src/events/event.store.ts',
    run: async (ch) => {
      const store = createClickHouseEventStore(ch);
      await store.findEvent('acc_cat', HOSTILE);
      await store.recentEvents('acc_cat', { limit: 50, sinceMs: T0 - 3_600_000, name: HOSTILE, identity: HOSTILE });
      return store.recentEvents('acc_cat', { limit: 50, sinceMs: T0 - 3_600_000 });
    },
  },
  {
    name: 'audit log page (every filter, a cursor)',
    site: 'packages/domain/src/audit/audit.store.ts',
    run: (ch) =>
      createAuditReader(ch).page({
        accountId: 'acc_cat',
        actor: HOSTILE,
        actorType: 'admin',
        action: HOSTILE,
        fromMs: 0,
        toMs: T0 * 2,
        after: { atMs: T0 * 2, id: HOSTILE },
        limit: 50,
      }),
  },
  {
    name: 'billing ledger list',
    site: 'packages/domain/src/ledger/ledger.store.ts',
    run: async (ch) => {
      await createLedgerReader(ch).list({ accountId: 'acc_cat', period: '202610' });
      return createLedgerReader(ch).list({});
    },
  },
  {
    name: 'exact counts per account (allowance reconciler, ledger closer)',
    site: 'services/processor/src/allowance/exact-counts.store.ts',
    run: (ch) => createExactCountsStore(ch).exactByAccount(T0 - 3_600_000, T0 + 3_600_000),
  },
  {
    name: 'dashboard usage history',
    site: 'services/console/src/dashboard/allowance-history.store.ts',
    run: (ch) => readAllowanceHistory(ch, HOSTILE, T0),
  },
  {
    name: 'setup: the read-only user (CREATE USER, ALTER USER, GRANT)',
    site: 'tools/cli/src/setup.ts',
    check: 'parse',
    servers: 'current',
    run: async (ch) => {
      for (const statement of readerUserStatements('ingest_reader', HOSTILE, 'ingest')) await ch.command(statement);
    },
  },
  {
    name: 'erasure: version(), count, the delete the server takes (lightweight DELETE on current servers), by hashes, the wait on system.mutations',
    site: 'packages/domain/src/erasure/events-erasure.store.ts',
    run: async (ch) => {
      const eraser = createEventsEraser(ch);
      await eraser.count('acc_cat', 'email', HOSTILE);
      await eraser.erase('acc_cat', 'email', HOSTILE);
      await eraser.erase('acc_cat', 'domain', HOSTILE);
      // After a restore: by the hashes of the suppression list (SHA256 of the row's JSON triple).
      await eraser.eraseByHashes('acc_cat', 'email', ['0'.repeat(64), 'f'.repeat(64)]);
      return eraser.waitForMutations(30_000);
    },
  },
  {
    name: "erasure: 18.16's ALTER TABLE … DELETE (a mutation), which current servers take too",
    site: 'packages/domain/src/erasure/events-erasure.store.ts',
    run: async (ch) => {
      const eraser = createEventsEraser(ch, { statement: 'mutation' });
      await eraser.erase('acc_cat', 'email', HOSTILE);
      return eraser.waitForMutations(30_000);
    },
  },
];

/**
 * Call sites of ClickHouse's query/command/insert per source file; the unit test counts them in
 * the sources and fails on a file or a count not listed. The client itself is not a call site.
 */
export const CATALOGUED_CALL_SITES: Readonly<Record<string, number>> = {
  // CREATE DATABASE and DROP DATABASE on a server-wide client (migrate, dropDatabase) are the
  // two not reached through applyPending; the tests' own database setup issues both.
  'packages/platform/src/clickhouse/migrations.ts': 7,
  'services/processor/src/storage/clickhouse.writer.ts': 1,
  'services/processor/src/topic-copier.ts': 1,
  'packages/http/src/events/event.store.ts': 2,
  'packages/domain/src/audit/audit.store.ts': 1,
  'packages/domain/src/ledger/ledger.store.ts': 1,
  'services/processor/src/allowance/exact-counts.store.ts': 1,
  'services/console/src/dashboard/allowance-history.store.ts': 1,
  'tools/cli/src/setup.ts': 1,
  'packages/domain/src/erasure/events-erasure.store.ts': 4,
};
