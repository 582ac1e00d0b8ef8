/**
 * `ingest setup`: provisions what the services need before they start: Kafka topics, the
 * services' Kafka ACLs (when KAFKA_ACL_PRINCIPALS is set; docs/security.md), ClickHouse
 * migrations, retention (docs/clickhouse-retention.md: TTLs, or on 18.16 the drop of expired
 * months, so run it daily there) and the Redis role users (when REDIS_ADMIN_URL is set). Idempotent; `npm start` runs it every time, operators run `npm run setup`, the
 * image's setup Job runs `ingest setup`. Logs (pino) on stdout; a failure is thrown to the frame.
 */
import {
  AppError,
  accessUserStatements,
  applyAcls,
  applyRetention,
  CLICKHOUSE_MIGRATIONS_DIR,
  ClickHouseConfig,
  CommonConfig,
  createClickHouse,
  openKafkaClientFromConfig,
  createLogger,
  ensureRedisRoleUsers,
  ensureTopics,
  KafkaConfig,
  loadConfig,
  migrate,
  parseAclPrincipals,
  readRedisTlsCa,
  readerUserStatements,
  replicationProblem,
  ROLLUPS_MIN_DAYS,
  serverHasSqlUsers,
} from '@ingest/platform';
import { upgradeEvents } from '@ingest/domain';
import { Type } from '@sinclair/typebox';
import { type Command, EXIT_OK, InputError, type Io, parseNoArguments } from './frame.js';

const SetupConfigSchema = Type.Object({
  ...CommonConfig,
  ...KafkaConfig,
  ...ClickHouseConfig,
  /** `role=principal` pairs whose ACLs setup creates (needs a super user); empty: none. */
  KAFKA_ACL_PRINCIPALS: Type.String({ default: '' }),
  CLICKHOUSE_MIGRATIONS_DIR: Type.String({ default: CLICKHOUSE_MIGRATIONS_DIR }),
  /**
   * A cluster of remote_servers: the migrations run ON CLUSTER with Replicated*MergeTree tables
   * and Distributed `<table>_all` tables (docs/scale.md, "Replicated ClickHouse"). Empty: one server.
   */
  CLICKHOUSE_CLUSTER: Type.String({ default: '', pattern: '^([A-Za-z_][A-Za-z0-9_]*)?$' }),
  /** The gateway's read-only user, created on servers with SQL users (20.4+); 18.16 takes it from users.xml. */
  CLICKHOUSE_READER_USER: Type.String({ default: '' }),
  CLICKHOUSE_READER_PASSWORD: Type.String({ default: '' }),
  /**
   * The console's user for per-account readers (docs/clickhouse-readers.md), created on servers
   * with SQL users when both are set; the console gets the same pair.
   */
  CLICKHOUSE_ACCESS_USER: Type.String({ default: '' }),
  CLICKHOUSE_ACCESS_PASSWORD: Type.String({ default: '' }),
  /**
   * Retention (docs/clickhouse-retention.md): days of events kept, by event time; 0 keeps them
   * forever. A TTL on current servers; on 18.16 (no TTL) setup drops expired months, so run it daily there.
   */
  EVENTS_RETENTION_DAYS: Type.Integer({ minimum: 0, default: 0 }),
  /** Days of the rollups (usage_hourly, events_daily) kept; 0: forever, else at least ROLLUPS_MIN_DAYS (they are read back that far). */
  ROLLUPS_RETENTION_DAYS: Type.Integer({ minimum: 0, default: 0 }),
  /**
   * A Redis user with ACL rights (the default user, or an admin): setup creates the role users of
   * REDIS_ROLE_PASSWORDS and checks every role's (docs/security.md, "Redis users"); empty: Redis
   * is not touched.
   */
  REDIS_ADMIN_URL: Type.String({ default: '' }),
  /** `gateway=pw,console=pw,processor=pw,crm-sink=pw`: the users setup creates or resets; empty: it only checks them. */
  REDIS_ROLE_PASSWORDS: Type.String({ default: '' }),
  REDIS_TLS_CA_FILE: Type.String({ default: '' }),
  REDIS_KEY_PREFIX: Type.String({ default: '', pattern: '^[A-Za-z0-9._:-]*$' }),
});

export const SETUP_COMMAND: Command<'setup'> = {
  usage: 'usage: ingest setup (no arguments; configured by the environment)\n',
  parse: (argv) => parseNoArguments('setup', argv),
  run: (_parsed, io) => runSetup(io),
};

export async function runSetup(io: Pick<Io, 'env'>): Promise<number> {
  const config = loadConfig(SetupConfigSchema, io.env);
  if (config.ROLLUPS_RETENTION_DAYS > 0 && config.ROLLUPS_RETENTION_DAYS < ROLLUPS_MIN_DAYS) {
    throw new Error(`ROLLUPS_RETENTION_DAYS must be 0 (forever) or at least ${ROLLUPS_MIN_DAYS}: the dashboard and the billing ledger read them back that far`);
  }
  const replication = { replicationFactor: config.KAFKA_REPLICATION_FACTOR, minInsyncReplicas: config.KAFKA_MIN_INSYNC_REPLICAS };
  // What no cluster could hold is refused before any server is touched; the broker count after connecting.
  const settingsProblem = replicationProblem(replication, Number.POSITIVE_INFINITY);
  if (settingsProblem !== undefined) throw new InputError(settingsProblem);
  const logger = createLogger({ service: 'setup', level: config.LOG_LEVEL });

  const kafka = await openKafkaClientFromConfig(config, 'setup', logger);
  const created = await ensureTopics(kafka, {
    prefix: config.KAFKA_TOPIC_PREFIX,
    ...replication,
    logger,
  }).catch((err: unknown) => {
    // Wrong settings for this cluster, nothing created: exit code 2 with the reason.
    throw err instanceof AppError && err.code === 'kafka_replication_invalid' ? new InputError(err.message) : err;
  });
  const principals = parseAclPrincipals(config.KAFKA_ACL_PRINCIPALS);
  const acls = principals.length > 0 ? await applyAcls(kafka, { principals, topicPrefix: config.KAFKA_TOPIC_PREFIX, logger }) : 0;

  const result = await migrate({
    url: config.CLICKHOUSE_URL,
    username: config.CLICKHOUSE_USER,
    password: config.CLICKHOUSE_PASSWORD,
    database: config.CLICKHOUSE_DATABASE,
    dir: config.CLICKHOUSE_MIGRATIONS_DIR,
    logger,
    ...(config.CLICKHOUSE_CLUSTER ? { cluster: config.CLICKHOUSE_CLUSTER } : {}),
  });

  // Current servers: a new deployment's still empty `events` takes the current shape now; a full
  // one is left to `ingest clickhouse upgrade-events` (docs/clickhouse.md). 18.16: nothing.
  // Retention runs after it, so its TTL lands on the table `events` names after the upgrade.
  const eventsClient = createClickHouse({
    url: config.CLICKHOUSE_URL,
    username: config.CLICKHOUSE_USER,
    password: config.CLICKHOUSE_PASSWORD,
    database: config.CLICKHOUSE_DATABASE,
  });
  let eventsUpgrade;
  let retention;
  try {
    // On a cluster `events` keeps the migrations' shape: the upgrade's EXCHANGE TABLES and its
    // bridge are single-server statements (docs/scale.md, "Replicated ClickHouse").
    eventsUpgrade = config.CLICKHOUSE_CLUSTER ? ({ status: 'not-on-a-cluster' } as const) : await upgradeEvents(eventsClient, { logger, onlyIfEmpty: true });
    if (eventsUpgrade.status === 'left-for-the-command') {
      logger.warn(
        { rows: eventsUpgrade.rows, clickhouse: eventsUpgrade.serverVersion },
        'events has the 18.16-compatible shape on a current server: run `ingest clickhouse upgrade-events` to upgrade it online (docs/clickhouse.md)',
      );
    }
    retention = await applyRetention(eventsClient, {
      settings: { eventsDays: config.EVENTS_RETENTION_DAYS, rollupsDays: config.ROLLUPS_RETENTION_DAYS },
      serverVersion: result.serverVersion,
      logger,
    });
  } finally {
    await eventsClient.close();
  }

  const sqlUsers: { user: string; statements: string[] }[] = [];
  if (config.CLICKHOUSE_ACCESS_USER !== '') {
    if (config.CLICKHOUSE_ACCESS_PASSWORD === '') throw new Error('CLICKHOUSE_ACCESS_PASSWORD is required with CLICKHOUSE_ACCESS_USER');
    if (serverHasSqlUsers(result.serverVersion)) {
      sqlUsers.push({
        user: config.CLICKHOUSE_ACCESS_USER,
        statements: accessUserStatements(config.CLICKHOUSE_ACCESS_USER, config.CLICKHOUSE_ACCESS_PASSWORD, config.CLICKHOUSE_DATABASE),
      });
    } else {
      logger.info(
        { user: config.CLICKHOUSE_ACCESS_USER, clickhouse: result.serverVersion },
        'no SQL users on this server: no per-account readers, and no access user for them (docs/clickhouse-readers.md)',
      );
    }
  }
  if (config.CLICKHOUSE_READER_USER !== '') {
    if (!serverHasSqlUsers(result.serverVersion)) {
      logger.info(
        { user: config.CLICKHOUSE_READER_USER, clickhouse: result.serverVersion },
        'no SQL users on this server: the read-only user must be in users.xml (docs/security.md)',
      );
    } else if (config.CLICKHOUSE_READER_PASSWORD === '') {
      throw new Error('CLICKHOUSE_READER_PASSWORD is required with CLICKHOUSE_READER_USER');
    } else {
      sqlUsers.push({
        user: config.CLICKHOUSE_READER_USER,
        statements: readerUserStatements(config.CLICKHOUSE_READER_USER, config.CLICKHOUSE_READER_PASSWORD, config.CLICKHOUSE_DATABASE),
      });
    }
  }
  if (sqlUsers.length > 0) {
    const admin = createClickHouse({ url: config.CLICKHOUSE_URL, username: config.CLICKHOUSE_USER, password: config.CLICKHOUSE_PASSWORD });
    try {
      for (const { statements } of sqlUsers) for (const statement of statements) await admin.command(statement);
    } finally {
      await admin.close();
    }
    logger.info({ users: sqlUsers.map((u) => u.user), database: config.CLICKHOUSE_DATABASE }, 'clickhouse users ensured');
  }

  const redisRoles =
    config.REDIS_ADMIN_URL === ''
      ? undefined
      : await ensureRedisRoleUsers({
          adminUrl: config.REDIS_ADMIN_URL,
          tlsCa: readRedisTlsCa(config.REDIS_TLS_CA_FILE),
          rolePasswords: config.REDIS_ROLE_PASSWORDS,
          keyPrefix: config.REDIS_KEY_PREFIX,
          logger,
        });

  logger.info(
    {
      topicsCreated: created.length,
      kafkaAcls: acls,
      migrationsApplied: result.applied,
      migrationsSkipped: result.skipped,
      eventsTable: eventsUpgrade.status,
      retentionTtlChanged: retention.ttlChanged,
      retentionPartitionsDropped: retention.partitionsDropped.length,
      clickhouse: result.serverVersion,
      redisRoleUsers: redisRoles ?? 'not checked (no REDIS_ADMIN_URL)',
    },
    'setup complete',
  );
  return EXIT_OK;
}
