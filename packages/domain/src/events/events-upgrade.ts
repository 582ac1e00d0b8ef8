/**
 * The one-time upgrade of `events` from the legacy (18.16-compatible) shape to the current-server
 * shape, online: events keep arriving and none is lost or counted twice (docs/clickhouse.md,
 * "Upgrading `events` to the current shape"). Run by `ingest clickhouse upgrade-events` and by
 * `ingest setup` after the migrations; a no-op once done and on servers older than 24.8.
 */
import { AppError, type ClickHouse, type Logger, literal, serverAtLeast } from '@ingest/platform';
import { type EventsRowFormat, type EventsShape, eventsRowFormatOf, eventsShapeOf, PERSON_ID_COLUMNS } from './events-table.js';

/** The oldest server the current shape is for (24.8 LTS = chdb 2.1.1 in the tests). */
export const CURRENT_EVENTS_MIN_SERVER = { major: 24, minor: 8 } as const;
/** properties_json, as in 0006_events_properties_json.sql (its comment says why 25.8). */
const PROPERTIES_JSON_MIN_SERVER = { major: 25, minor: 8 } as const;

export const EVENTS_NEXT_TABLE = 'events_next';
export const EVENTS_BRIDGE_VIEW = 'events_upgrade_bridge';
/** The legacy table after the switch, kept for a check or a rollback; the operator drops it. */
export const EVENTS_BEFORE_UPGRADE_TABLE = 'events_before_upgrade';
export const EVENTS_UPGRADES_TABLE = 'events_upgrades';

/**
 * The current-server `events`. Same sorting key as the legacy table (toDate of a DateTime64 is
 * the same day), so an event copied and also bridged collapses into one row like a redelivery.
 * LowCardinality where an account has few distinct values; DoubleDelta/Delta + ZSTD on times
 * (sorted within a part); bloom filters for the read-back by event_id and the lookups by email
 * and domain (erasure, a person's timeline), which are not a prefix of the key.
 */
export function currentEventsDdl(table: string, withPropertiesJson: boolean): string {
  return `CREATE TABLE ${table}
(
    account_id      LowCardinality(String),
    event_id        String CODEC(ZSTD(1)),
    event_name      LowCardinality(String),
    email           String CODEC(ZSTD(1)),
    domain          String CODEC(ZSTD(1)),
    event_time      DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    event_time_ms   Int64 ALIAS toUnixTimestamp64Milli(event_time),
    received_at     DateTime64(3, 'UTC') CODEC(DoubleDelta, ZSTD(1)),
    received_at_ms  Int64 ALIAS toUnixTimestamp64Milli(received_at),
    properties      String CODEC(ZSTD(3)),
    source          Enum8('api' = 1, 'bulk' = 2, 'csv' = 3),
    job_id          String CODEC(ZSTD(1)),
    user_id         String DEFAULT '' CODEC(ZSTD(1)),
    anonymous_id    String DEFAULT '' CODEC(ZSTD(1)),
    context         String DEFAULT '' CODEC(ZSTD(3)),
    inserted_at     DateTime64(3, 'UTC') CODEC(Delta, ZSTD(1)),${
      withPropertiesJson ? "\n    properties_json JSON MATERIALIZED accurateCastOrDefault(properties, 'JSON')," : ''
    }
    INDEX event_id_bloom event_id TYPE bloom_filter(0.01) GRANULARITY 4,
    INDEX email_bloom email TYPE bloom_filter(0.01) GRANULARITY 4,
    INDEX domain_bloom domain TYPE bloom_filter(0.01) GRANULARITY 4
)
ENGINE = ReplacingMergeTree(inserted_at)
PARTITION BY toYYYYMM(event_time)
ORDER BY (account_id, toDate(event_time), event_name, event_id)`;
}

/**
 * Legacy rows in current terms: the bridge and the copy use this same SELECT, so their rows are
 * identical. The person columns are copied when the legacy table has them (migration 0007, which
 * setup applies before it upgrades); a table upgraded without it has none to copy.
 */
function legacyAsCurrent(withPersonIds: boolean): string {
  const personIds = withPersonIds ? PERSON_ID_COLUMNS.join(', ') : PERSON_ID_COLUMNS.map((c) => `'' AS ${c}`).join(', ');
  return `SELECT account_id, event_id, event_name, email, domain,
    fromUnixTimestamp64Milli(event_time_ms, 'UTC') AS event_time,
    fromUnixTimestamp64Milli(received_at_ms, 'UTC') AS received_at,
    properties, source, job_id, ${personIds},
    toDateTime64(inserted_at, 3, 'UTC') AS inserted_at
FROM events`;
}
const CURRENT_COLUMNS_SENT =
  'account_id, event_id, event_name, email, domain, event_time, received_at, properties, source, job_id, user_id, anonymous_id, context, inserted_at';

/**
 * events_dedup again, as 0007_events_person_ids.sql makes it: the columns named (`SELECT *` leaves
 * out ALIAS columns, readers select event_time_ms through it, and a `*` view keeps the columns of
 * the day it was made), the same list on both shapes.
 */
export const CURRENT_EVENTS_DEDUP_VIEW = `CREATE OR REPLACE VIEW events_dedup AS SELECT account_id, event_id, event_name, email, domain, event_time, event_time_ms, received_at, received_at_ms, properties, source, job_id, user_id, anonymous_id, context, inserted_at FROM events FINAL`;

export type UpgradeEventsResult =
  | { status: 'not-for-this-server'; serverVersion: string; needs: string }
  | { status: 'already-current'; serverVersion: string }
  | { status: 'left-for-the-command'; serverVersion: string; rows: number }
  | { status: 'upgraded'; serverVersion: string; partitions: number; rows: number; switchedAtMs: number };

export interface UpgradeEventsOptions {
  logger: Logger;
  /**
   * Only a table without rows (setup: a new deployment gets the current shape at once; a copy of
   * a full table is the operator's decision, `ingest clickhouse upgrade-events`).
   */
  onlyIfEmpty?: boolean;
  /** How long to wait for inserts that were running when the bridge appeared (default 5 min). */
  insertsWaitMs?: number;
  /** Called between steps (the test inserts there, as a writer would). */
  afterStep?: (step: UpgradeStep) => Promise<void>;
  now?: () => number;
  sleep?: (ms: number) => Promise<void>;
}

export type UpgradeStep = 'created' | 'bridged' | 'inserts-settled' | `copied:${string}` | 'switched';

/** The shape of `events` in the client's database (system.columns; the same SQL on 18.16). */
export async function readEventsShape(ch: ClickHouse): Promise<EventsShape> {
  return eventsShapeOf(await readEventsColumns(ch));
}

/** The row format the writer uses for `events` as it is now (eventsRowFormatOf). */
export async function readEventsRowFormat(ch: ClickHouse): Promise<EventsRowFormat> {
  return eventsRowFormatOf(await readEventsColumns(ch));
}

function readEventsColumns(ch: ClickHouse): Promise<{ name: string; type: string }[]> {
  return ch.query<{ name: string; type: string }>("SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = 'events'");
}

/**
 * The upgrade, in a client already in the database:
 * 1. `events_next` in the current shape; a materialized view `events_upgrade_bridge` copies every
 *    insert into the legacy `events` to it from now on.
 * 2. It waits until the inserts running when the bridge appeared have finished (they may not see
 *    the bridge): every later insert goes through it.
 * 3. Each partition of `events` is copied with `INSERT … SELECT`. A row inserted between the
 *    bridge and its partition's copy arrives twice, identical (same SELECT), and ReplacingMergeTree
 *    keeps one, as for a redelivered event; FINAL, events_dedup and the rollups (uniqExact of
 *    event ids) count it once from the start.
 * 4. The switch, recorded in `events_upgrades`: `EXCHANGE TABLES events AND events_next` (atomic),
 *    then the bridge is dropped, events_dedup is made again, and the legacy table is renamed
 *    `events_before_upgrade`. The rollups' materialized views name `events`, so they fire on the
 *    current table from the switch on. A writer still sending legacy lines fails its insert
 *    (nothing is stored, its offsets stay uncommitted), looks at the shape again and re-reads.
 * An interrupted run is started again from step 1 (the leftovers are dropped first).
 */
export async function upgradeEvents(ch: ClickHouse, options: UpgradeEventsOptions): Promise<UpgradeEventsResult> {
  const log = options.logger.child({ component: 'events-upgrade' });
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const step = async (s: UpgradeStep) => {
    log.info({ step: s }, 'events upgrade step');
    await options.afterStep?.(s);
  };
  const [{ version: serverVersion } = { version: '0' }] = await ch.query<{ version: string }>('SELECT version() AS version');
  if (!serverAtLeast(serverVersion, CURRENT_EVENTS_MIN_SERVER)) {
    return { status: 'not-for-this-server', serverVersion, needs: `${CURRENT_EVENTS_MIN_SERVER.major}.${CURRENT_EVENTS_MIN_SERVER.minor}` };
  }
  const legacyColumns = await readEventsColumns(ch);
  if (eventsShapeOf(legacyColumns) === 'current') {
    // A run stopped right after the switch leaves the bridge: it must not outlive it.
    await ch.command(`DROP VIEW IF EXISTS ${EVENTS_BRIDGE_VIEW}`);
    return { status: 'already-current', serverVersion };
  }

  if (options.onlyIfEmpty) {
    const [{ rows } = { rows: '0' }] = await ch.query<{ rows: string }>('SELECT count() AS rows FROM events');
    if (Number(rows) > 0) return { status: 'left-for-the-command', serverVersion, rows: Number(rows) };
  }
  // EXCHANGE TABLES needs an Atomic database: one created by 18.16 (then the server upgraded) is Ordinary.
  const [{ engine } = { engine: '' }] = await ch.query<{ engine: string }>('SELECT engine FROM system.databases WHERE name = currentDatabase()');
  if (engine !== 'Atomic') {
    if (options.onlyIfEmpty) return { status: 'left-for-the-command', serverVersion, rows: 0 };
    throw new AppError(
      'database_not_atomic',
      `the events upgrade needs an Atomic database (EXCHANGE TABLES); this one is ${engine}: convert it first (docs/clickhouse.md, "Upgrading events")`,
    );
  }
  const legacyAsCurrentSelect = legacyAsCurrent(legacyColumns.some((c) => c.name === 'user_id'));
  await ch.command(`DROP VIEW IF EXISTS ${EVENTS_BRIDGE_VIEW}`);
  await ch.command(`DROP TABLE IF EXISTS ${EVENTS_NEXT_TABLE}`);
  await ch.command(currentEventsDdl(EVENTS_NEXT_TABLE, serverAtLeast(serverVersion, PROPERTIES_JSON_MIN_SERVER)));
  await step('created');
  await ch.command(`CREATE MATERIALIZED VIEW ${EVENTS_BRIDGE_VIEW} TO ${EVENTS_NEXT_TABLE} AS ${legacyAsCurrentSelect}`);
  await step('bridged');

  const running = await ch.query<{ query_id: string }>("SELECT query_id FROM system.processes WHERE query_kind = 'Insert'");
  const waitUntil = now() + (options.insertsWaitMs ?? 300_000);
  let left = running.map((r) => r.query_id);
  while (left.length > 0) {
    if (now() > waitUntil) throw new Error(`inserts still running after the bridge appeared: ${left.join(', ')}; run the upgrade again`);
    await sleep(200);
    const still = await ch.query<{ query_id: string }>(`SELECT query_id FROM system.processes WHERE query_id IN (${left.map((id) => literal(id)).join(', ')})`);
    left = still.map((r) => r.query_id);
  }
  await step('inserts-settled');

  const partitions = await ch.query<{ partition_id: string }>(
    "SELECT DISTINCT partition_id FROM system.parts WHERE database = currentDatabase() AND table = 'events' AND active ORDER BY partition_id",
  );
  for (const { partition_id: id } of partitions) {
    await ch.command(`INSERT INTO ${EVENTS_NEXT_TABLE} (${CURRENT_COLUMNS_SENT}) ${legacyAsCurrentSelect} WHERE _partition_id = ${literal(id)}`);
    await step(`copied:${id}`);
  }

  await ch.command(`EXCHANGE TABLES events AND ${EVENTS_NEXT_TABLE}`);
  const switchedAtMs = now();
  await ch.command(`DROP VIEW IF EXISTS ${EVENTS_BRIDGE_VIEW}`);
  await ch.command(CURRENT_EVENTS_DEDUP_VIEW);
  await ch.command(`RENAME TABLE ${EVENTS_NEXT_TABLE} TO ${EVENTS_BEFORE_UPGRADE_TABLE}`);
  const [{ rows } = { rows: '0' }] = await ch.query<{ rows: string }>(`SELECT count() AS rows FROM ${EVENTS_BEFORE_UPGRADE_TABLE}`);
  await ch.command(
    `CREATE TABLE IF NOT EXISTS ${EVENTS_UPGRADES_TABLE} (switched_at DateTime64(3, 'UTC'), server_version String, partitions UInt32, legacy_rows UInt64) ENGINE = MergeTree ORDER BY switched_at`,
  );
  await ch.insert(EVENTS_UPGRADES_TABLE, [
    {
      switched_at: new Date(switchedAtMs).toISOString().slice(0, 23).replace('T', ' '),
      server_version: serverVersion,
      partitions: partitions.length,
      legacy_rows: String(rows),
    },
  ]);
  await step('switched');
  log.info({ partitions: partitions.length, legacyRows: Number(rows), serverVersion }, 'events upgraded to the current shape');
  return { status: 'upgraded', serverVersion, partitions: partitions.length, rows: Number(rows), switchedAtMs };
}
