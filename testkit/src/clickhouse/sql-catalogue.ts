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
  CURRENT_EVENT_COLUMNS,
  toCurrentEventLine,
  upgradeEvents,
} from '@ingest/domain';
import { createClickHouseEventStore } from '@ingest/http';
import {
  accessUserStatements,
  appliedMigrationVersions,
  applyPending,
  applyRetention,
  type ClickHouse,
  CLICKHOUSE_MIGRATIONS_DIR,
  clickhouseServerVersion,
  createLogger,
  createReplicaWatch,
  createTenantReader,
  dataTables,
  insertableColumns,
  loadMigrations,
  materializedViews,
  newReaderPassword,
  readerUserStatements,
  removeTenantReader,
  restoreInsertSettings,
  rotateTenantReader,
  rowCount,
  serverHasTtl,
  serverVersion,
  setAttached,
  tablePartitions,
  tenantReaderExists,
} from '@ingest/platform';
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
    name: 'setup: the read-only user and the access user (CREATE USER, ALTER USER, GRANT)',
    site: 'tools/cli/src/setup.ts',
    check: 'parse',
    servers: 'current',
    run: async (ch) => {
      for (const statement of readerUserStatements('ingest_reader', HOSTILE, 'ingest')) await ch.command(statement);
      // The console's access user for per-account readers (CLICKHOUSE_ACCESS_USER), through the same call site.
      for (const statement of accessUserStatements('ingest_access', HOSTILE, 'ingest')) await ch.command(statement);
    },
  },
  {
    name: 'admin API: a per-account ClickHouse reader (version, exists, CREATE USER/ROW POLICY/SETTINGS PROFILE/QUOTA, ALTER USER, DROP)',
    site: 'packages/platform/src/clickhouse/tenant-reader.ts',
    check: 'parse',
    servers: 'current',
    run: async (ch) => {
      await clickhouseServerVersion(ch);
      // Account ids are acc_ + base62 (tenantReaderName refuses anything else): no hostile text reaches this SQL.
      await tenantReaderExists(ch, 'acc_cat');
      const { sha256Hex } = newReaderPassword();
      await createTenantReader(ch, { accountId: 'acc_cat', database: 'ingest', sha256Hex });
      await rotateTenantReader(ch, { accountId: 'acc_cat', sha256Hex });
      await removeTenantReader(ch, { accountId: 'acc_cat', database: 'ingest' });
    },
  },
  {
    name: 'processor: replica watch (system.replicas and system.replication_queue of its database)',
    site: 'packages/platform/src/clickhouse/replica-watch.ts',
    run: async (ch) => {
      const [{ db = '' } = {}] = await ch.query<{ db: string }>('SELECT currentDatabase() AS db');
      // Not started and never stopped: stop() would close the catalogue's client.
      const watch = createReplicaWatch({ url: 'http://replica-1:8123', database: db, logger, registry: new Registry(), connect: () => ch });
      const verdicts = await watch.check();
      // A refused query shows as `unreachable` with the server's message.
      if (verdicts.length !== 1 || verdicts[0]?.cause !== undefined) throw new Error(`replica watch: ${JSON.stringify(verdicts)}`);
    },
  },
  {
    name: 'setup: retention (TTL set, kept, removed; and the partition drop of servers without TTL)',
    site: 'packages/platform/src/clickhouse/retention.ts',
    run: async (ch) => {
      const [{ v: version = '0' } = {}] = await ch.query<{ v: string }>('SELECT version() AS v');
      const settings = { eventsDays: 30, rollupsDays: 400 };
      const first = await applyRetention(ch, { settings, serverVersion: version, logger });
      // Applied once: a second run with the same settings must find the TTLs in place.
      const again = await applyRetention(ch, { settings, serverVersion: version, logger });
      const removed = await applyRetention(ch, { settings: { eventsDays: 0, rollupsDays: 0 }, serverVersion: version, logger });
      await applyRetention(ch, { settings, serverVersion: '18.16.1', logger, now: () => T0 });
      // Servers without TTL (18.16) change no TTL: there the partition drop below is the path.
      const changes = serverHasTtl(version) ? 3 : 0;
      if (first.ttlChanged.length !== changes || again.ttlChanged.length !== 0 || removed.ttlChanged.length !== changes) {
        throw new Error(`retention: ${JSON.stringify({ first, again, removed })}`);
      }
    },
  },
  {
    // Upgrades the catalogue's own events table: on the current engines the entries after this one
    // run against the current shape. On 18.16 it asks the version and stops there.
    name: 'events upgrade: shape, row count, database engine, bridge, inserts running, partitions, copy, switch, record (setup step and ingest clickhouse upgrade-events)',
    site: 'packages/domain/src/events/events-upgrade.ts',
    run: async (ch) => {
      const setupStep = await upgradeEvents(ch, { logger, onlyIfEmpty: true });
      const upgraded = await upgradeEvents(ch, { logger });
      const again = await upgradeEvents(ch, { logger });
      return [setupStep, upgraded, again];
    },
  },
  {
    name: 'storage writer: the events rows as TabSeparated in the current shape',
    site: 'services/processor/src/storage/clickhouse.writer.ts',
    servers: 'current',
    run: (ch) =>
      createClickHouseWriter({ ch, table: 'events', columns: CURRENT_EVENT_COLUMNS, logger, metrics: new Registry() }).write(
        [
          toCurrentEventLine(
            {
              v: EVENT_RECORD_VERSION,
              accountId: 'acc_cat_current',
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
    name: 'backup and restore: data tables, views, columns, partitions, row counts, migrations, version, insert settings',
    site: 'packages/platform/src/clickhouse/table-backup.ts',
    run: async (ch) => {
      for (const table of await dataTables(ch, ch.database)) {
        await insertableColumns(ch, ch.database, table.name);
        await tablePartitions(ch, ch.database, table.name);
        await rowCount(ch, ch.database, table.name);
      }
      await materializedViews(ch, ch.database);
      await appliedMigrationVersions(ch, ch.database);
      await serverVersion(ch);
      return restoreInsertSettings(ch);
    },
  },
  {
    // Executed on 18.16 (clickhouse-engines.integration.test.ts); chdb 2.x loads the databases
    // afresh for every statement, so a DETACH does not last there: its parser checks them.
    name: 'restore: DETACH and ATTACH of a materialized view',
    site: 'packages/platform/src/clickhouse/table-backup.ts',
    check: 'parse',
    run: async (ch) => {
      await setAttached(ch, ch.database, 'usage_hourly_mv', false);
      await setAttached(ch, ch.database, 'usage_hourly_mv', true);
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
  // two not reached through applyPending; the tests' own database setup issues both. The lookup of
  // the Distributed tables runs on a cluster only (CLICKHOUSE_CLUSTER): the 18.16 cluster of the
  // scale tests issues it; system.columns (0007's ADD COLUMN IF NOT EXISTS) runs here.
  'packages/platform/src/clickhouse/migrations.ts': 9,
  'services/processor/src/storage/clickhouse.writer.ts': 1,
  'services/processor/src/topic-copier.ts': 1,
  'packages/http/src/events/event.store.ts': 2,
  'packages/domain/src/audit/audit.store.ts': 1,
  'packages/domain/src/ledger/ledger.store.ts': 1,
  'services/processor/src/allowance/exact-counts.store.ts': 1,
  'services/console/src/dashboard/allowance-history.store.ts': 1,
  'tools/cli/src/setup.ts': 1,
  'packages/domain/src/events/events-upgrade.ts': 20,
  'packages/platform/src/clickhouse/tenant-reader.ts': 5,
  'packages/platform/src/clickhouse/replica-watch.ts': 2,
  'packages/platform/src/clickhouse/retention.ts': 5,
  'packages/platform/src/clickhouse/table-backup.ts': 9,
  'packages/domain/src/erasure/events-erasure.store.ts': 4,
};
