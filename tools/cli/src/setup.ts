/**
 * `ingest setup`: provisions what the services need before they start: Kafka topics, the
 * services' Kafka ACLs (when KAFKA_ACL_PRINCIPALS is set; docs/security.md), ClickHouse
 * migrations and the Redis role users (when REDIS_ADMIN_URL is set). Idempotent; `npm start` runs it every time, operators run `npm run setup`, the
 * image's setup Job runs `ingest setup`. Logs (pino) on stdout; a failure is thrown to the frame.
 */
import {
  applyAcls,
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
  serverHasSqlUsers,
} from '@ingest/platform';
import { upgradeEvents } from '@ingest/domain';
import { Type } from '@sinclair/typebox';
import { type Command, EXIT_OK, type Io, parseNoArguments } from './frame.js';

const SetupConfigSchema = Type.Object({
  ...CommonConfig,
  ...KafkaConfig,
  ...ClickHouseConfig,
  KAFKA_REPLICATION_FACTOR: Type.Integer({ minimum: 1, default: 1 }),
  /** `role=principal` pairs whose ACLs setup creates (needs a super user); empty: none. */
  KAFKA_ACL_PRINCIPALS: Type.String({ default: '' }),
  CLICKHOUSE_MIGRATIONS_DIR: Type.String({ default: CLICKHOUSE_MIGRATIONS_DIR }),
  /** The gateway's read-only user, created on servers with SQL users (20.4+); 18.16 takes it from users.xml. */
  CLICKHOUSE_READER_USER: Type.String({ default: '' }),
  CLICKHOUSE_READER_PASSWORD: Type.String({ default: '' }),
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
  const logger = createLogger({ service: 'setup', level: config.LOG_LEVEL });

  const kafka = await openKafkaClientFromConfig(config, 'setup', logger);
  const created = await ensureTopics(kafka, { prefix: config.KAFKA_TOPIC_PREFIX, replicationFactor: config.KAFKA_REPLICATION_FACTOR, logger });
  const principals = parseAclPrincipals(config.KAFKA_ACL_PRINCIPALS);
  const acls = principals.length > 0 ? await applyAcls(kafka, { principals, topicPrefix: config.KAFKA_TOPIC_PREFIX, logger }) : 0;

  const result = await migrate({
    url: config.CLICKHOUSE_URL,
    username: config.CLICKHOUSE_USER,
    password: config.CLICKHOUSE_PASSWORD,
    database: config.CLICKHOUSE_DATABASE,
    dir: config.CLICKHOUSE_MIGRATIONS_DIR,
    logger,
  });

  // Current servers: a new deployment's still empty `events` takes the current shape now; a full
  // one is left to `ingest clickhouse upgrade-events` (docs/clickhouse.md). 18.16: nothing.
  const eventsClient = createClickHouse({
    url: config.CLICKHOUSE_URL,
    username: config.CLICKHOUSE_USER,
    password: config.CLICKHOUSE_PASSWORD,
    database: config.CLICKHOUSE_DATABASE,
  });
  const eventsUpgrade = await upgradeEvents(eventsClient, { logger, onlyIfEmpty: true }).finally(() => eventsClient.close());
  if (eventsUpgrade.status === 'left-for-the-command') {
    logger.warn(
      { rows: eventsUpgrade.rows, clickhouse: eventsUpgrade.serverVersion },
      'events has the 18.16-compatible shape on a current server: run `ingest clickhouse upgrade-events` to upgrade it online (docs/clickhouse.md)',
    );
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
      const admin = createClickHouse({ url: config.CLICKHOUSE_URL, username: config.CLICKHOUSE_USER, password: config.CLICKHOUSE_PASSWORD });
      try {
        for (const statement of readerUserStatements(config.CLICKHOUSE_READER_USER, config.CLICKHOUSE_READER_PASSWORD, config.CLICKHOUSE_DATABASE))
          await admin.command(statement);
      } finally {
        await admin.close();
      }
      logger.info({ user: config.CLICKHOUSE_READER_USER, database: config.CLICKHOUSE_DATABASE }, 'clickhouse read-only user ensured');
    }
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
      clickhouse: result.serverVersion,
      redisRoleUsers: redisRoles ?? 'not checked (no REDIS_ADMIN_URL)',
    },
    'setup complete',
  );
  return EXIT_OK;
}
