/**
 * `ingest backup --to DIR` and `ingest restore --from DIR` (docs/runbook.md, "Backup and
 * restore"): every control topic, the billing ledger and the audit log read to their end, and
 * every ClickHouse table that holds data, dumped per partition, with a manifest of counts and
 * checksums. They talk to Kafka and ClickHouse directly, like `ingest setup`, with the same
 * settings. Secrets stay as stored: sealed CRM credentials stay sealed (the private key is not
 * read), password and key hashes stay hashes. Progress is logged (pino, on stderr); the summary
 * goes to stdout.
 */
import { mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import {
  ClickHouseConfig,
  CommonConfig,
  createClickHouse,
  createLogger,
  createProducer,
  appliedMigrationVersions,
  dataTables,
  insertableColumns,
  materializedViews,
  restoreInsertSettings,
  rowCount,
  serverVersion,
  setAttached,
  KafkaConfig,
  type KafkaClient,
  type Logger,
  loadConfig,
  openKafkaClientFromConfig,
  committedOffsets,
  skipGroupToEnd,
  type PartitionRange,
  TOPICS,
  topicOffsets,
} from '@ingest/platform';
import { Type, type Static } from '@sinclair/typebox';
import { type Command, EXIT_OK, HELP, InputError, type Io, isHelp, parseCommandLine, UsageError } from '../frame.js';
import { type BackupManifest, MANIFEST_FILE, MANIFEST_VERSION, readManifest, verifyFiles, writeManifest } from './manifest.js';
import { type ClickHouseHttp, dumpTable, insertPartition, type TableDump } from './table-dump.js';
import { backupTopicKeys, dumpTopic, restoreTopic } from './topic-dump.js';

const BackupConfigSchema = Type.Object({
  ...CommonConfig,
  ...KafkaConfig,
  ...ClickHouseConfig,
  /** How long reading one topic to its end may take (the audit log keeps two years). */
  BACKUP_TOPIC_TIMEOUT_MS: Type.Integer({ minimum: 1_000, default: 3_600_000 }),
  /** The processor's groups that copy billing.ledger and audit.log into ClickHouse (as in its settings). */
  PROCESSOR_LEDGER_GROUP: Type.String({ minLength: 1, default: 'processor-ledger' }),
  PROCESSOR_AUDIT_GROUP: Type.String({ minLength: 1, default: 'processor-audit' }),
});
type BackupConfig = Static<typeof BackupConfigSchema>;

/** Written by `ingest setup`, not by a restore: the target's own rows say which migrations it has. */
const MIGRATIONS_TABLE = 'schema_migrations';

export const BACKUP_USAGE = `usage: ingest backup --to DIR
  Reads every control topic, billing.ledger and audit.log to its end and dumps every ClickHouse
  table of CLICKHOUSE_DATABASE (per partition), with DIR/${MANIFEST_FILE} (counts, checksums).
  DIR must be empty or absent; it is created with mode 0700, the files with 0600.
Settings: KAFKA_BROKERS, KAFKA_TOPIC_PREFIX, KAFKA_* security, CLICKHOUSE_URL, CLICKHOUSE_USER,
  CLICKHOUSE_PASSWORD, CLICKHOUSE_DATABASE (as the services), BACKUP_TOPIC_TIMEOUT_MS.
`;

export const RESTORE_USAGE = `usage: ingest restore --from DIR [--only kafka|clickhouse] [--force]
  Writes a backup back: the topics (in order, tombstones included, each record to its partition)
  and the tables (the rollups from their dump, with the materialized views detached while
  inserting, so nothing is counted twice). Run \`ingest setup\` on the target first, and start
  the services after the restore.
  --only    restore the topics alone (kafka) or the tables alone (clickhouse), e.g. when only
            ClickHouse was lost
  --force   restore into topics that hold records or tables that hold rows (otherwise refused)
Settings: as ingest backup.
`;

type BackupParsed = { dir: string };
const PARTS = ['kafka', 'clickhouse'] as const;
type RestoreParsed = { dir: string; force: boolean; only?: (typeof PARTS)[number] };

function parseDir(argv: readonly string[], flag: 'to' | 'from'): RestoreParsed | typeof HELP {
  const { values, positionals } = parseCommandLine(argv, {
    to: { type: 'string' },
    from: { type: 'string' },
    force: { type: 'boolean' },
    only: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  });
  if (values.help || (positionals.length > 0 && isHelp(positionals[0]))) return HELP;
  if (positionals.length > 0) throw new UsageError(`unexpected argument ${positionals[0]}`);
  const other = flag === 'to' ? 'from' : 'to';
  if (values[other] !== undefined) throw new UsageError(`--${other} belongs to the other command`);
  if (flag === 'to' && (values.force !== undefined || values.only !== undefined)) throw new UsageError('--force and --only are options of restore');
  const only = values.only;
  if (only !== undefined && !(PARTS as readonly string[]).includes(only)) throw new UsageError(`--only takes ${PARTS.join(' or ')}`);
  const dir = values[flag];
  if (dir === undefined || dir === '') throw new UsageError(`--${flag} DIR is required`);
  return { dir, force: values.force === true, ...(only ? { only: only as RestoreParsed['only'] } : {}) };
}

export const BACKUP_COMMAND: Command<BackupParsed> = {
  usage: BACKUP_USAGE,
  parse: (argv) => {
    const parsed = parseDir(argv, 'to');
    return parsed === HELP ? HELP : { dir: parsed.dir };
  },
  run: (parsed, io) => runBackup(parsed, io),
};

export const RESTORE_COMMAND: Command<RestoreParsed> = {
  usage: RESTORE_USAGE,
  parse: (argv) => parseDir(argv, 'from'),
  run: (parsed, io) => runRestore(parsed, io),
};

interface Context {
  config: BackupConfig;
  logger: Logger;
  kafka: KafkaClient;
  http: ClickHouseHttp;
}

async function open(io: Io, service: string): Promise<Context> {
  const config = loadConfig(BackupConfigSchema, io.env);
  const logger = createLogger({ service, level: config.LOG_LEVEL, destination: { write: (line: string) => io.stderr(line) } });
  const kafka = await openKafkaClientFromConfig(config, service, logger);
  const http = { url: config.CLICKHOUSE_URL, user: config.CLICKHOUSE_USER, password: config.CLICKHOUSE_PASSWORD, database: config.CLICKHOUSE_DATABASE };
  return { config, logger, kafka, http };
}

function clickhouseOf(ctx: Context) {
  return createClickHouse({ url: ctx.http.url, username: ctx.http.user, password: ctx.http.password, database: ctx.http.database });
}

async function runBackup(parsed: BackupParsed, io: Io): Promise<number> {
  const entries = await readdir(parsed.dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [];
    throw err;
  });
  if (entries.length > 0) throw new InputError(`${parsed.dir} is not empty: a backup goes into a new directory`);
  const ctx = await open(io, 'backup');
  const startedAt = new Date().toISOString();
  await mkdir(join(parsed.dir, 'kafka'), { recursive: true, mode: 0o700 });
  const prefix = ctx.config.KAFKA_TOPIC_PREFIX;
  // In parallel: each read is mostly waiting for its consumer group to form.
  const topics = await Promise.all(
    backupTopicKeys().map((key) => {
      const name = TOPICS[key].name;
      const file = `kafka/${name}.jsonl.gz`;
      return dumpTopic({
        kafka: ctx.kafka,
        topic: `${prefix}${name}`,
        name,
        path: join(parsed.dir, file),
        file,
        logger: ctx.logger,
        timeoutMs: ctx.config.BACKUP_TOPIC_TIMEOUT_MS,
      });
    }),
  );
  for (const t of topics) ctx.logger.info({ topic: t.name, records: t.records, tombstones: t.tombstones }, 'backup: topic dumped');

  const ch = clickhouseOf(ctx);
  try {
    const version = await serverVersion(ch);
    const migrations = await appliedMigrationVersions(ch, ctx.http.database);
    const tables: TableDump[] = [];
    for (const table of await dataTables(ch, ctx.http.database)) {
      const relDir = `clickhouse/${table.name}`;
      await mkdir(join(parsed.dir, relDir), { recursive: true, mode: 0o700 });
      tables.push(await dumpTable({ ch, http: ctx.http, table, dir: parsed.dir, relDir, logger: ctx.logger }));
    }
    const manifest: BackupManifest = {
      v: MANIFEST_VERSION,
      startedAt,
      finishedAt: new Date().toISOString(),
      kafka: { topicPrefix: prefix, topics },
      clickhouse: { serverVersion: version, database: ctx.http.database, migrations, tables },
    };
    await writeManifest(parsed.dir, manifest);
    ctx.logger.info({ dir: parsed.dir, topics: topics.length, tables: tables.length }, 'backup complete');
    io.stdout(summary('backed up', manifest));
    return EXIT_OK;
  } finally {
    await ch.close();
  }
}

function summary(verb: string, m: BackupManifest): string {
  const topicLines = m.kafka.topics.map((t) => `  ${t.name}: ${t.records} records (${t.tombstones} tombstones)`);
  const tableLines = m.clickhouse.tables.map((t) => `  ${t.name}: ${t.rows} rows in ${t.partitions.length} partition(s)`);
  return `${verb}: ${m.kafka.topics.length} topics, ${m.clickhouse.tables.length} tables\n${[...topicLines, ...tableLines].join('\n')}\n`;
}

async function targetOffsets(kafka: KafkaClient, topic: string): Promise<PartitionRange[]> {
  try {
    const ranges = await topicOffsets(kafka, topic);
    if (ranges.length === 0) throw new Error('no partitions');
    return ranges;
  } catch (err) {
    throw new InputError(`topic ${topic} cannot be read (${(err as Error).message}): create the topics with \`ingest setup\` first`);
  }
}

/** The part of the backup `--only` keeps. */
function restoredPart(manifest: BackupManifest, only: RestoreParsed['only']): BackupManifest {
  if (only === 'clickhouse') return { ...manifest, kafka: { ...manifest.kafka, topics: [] } };
  if (only === 'kafka') return { ...manifest, clickhouse: { ...manifest.clickhouse, migrations: [], tables: [] } };
  return manifest;
}

async function runRestore(parsed: RestoreParsed, io: Io): Promise<number> {
  const manifest = restoredPart(await readManifest(parsed.dir), parsed.only);
  await verifyFiles(parsed.dir, manifest);
  const ctx = await open(io, 'restore');
  const prefix = ctx.config.KAFKA_TOPIC_PREFIX;
  const ch = clickhouseOf(ctx);
  try {
    await checkTarget(ctx, ch, manifest, parsed.force);

    const producer = createProducer(ctx.kafka, { logger: ctx.logger });
    await producer.connect();
    try {
      for (const t of manifest.kafka.topics) {
        const restored = await restoreTopic({ producer, topic: `${prefix}${t.name}`, name: t.name, path: join(parsed.dir, t.file), logger: ctx.logger });
        ctx.logger.info({ topic: t.name, records: restored }, 'restore: topic written');
      }
    } finally {
      await producer.disconnect();
    }

    // The rollups are restored from their own dump, so inserting `events` must not feed the
    // materialized views a second time: they are detached while the tables are inserted and
    // attached again afterwards (even after a failure).
    const settings = await restoreInsertSettings(ch);
    const views = manifest.clickhouse.tables.length > 0 ? await materializedViews(ch, ctx.http.database) : [];
    for (const v of views) await setAttached(ch, ctx.http.database, v, false);
    try {
      for (const table of manifest.clickhouse.tables) {
        if (table.name === MIGRATIONS_TABLE) continue;
        for (const [index, part] of table.partitions.entries()) {
          await insertPartition(ctx.http, table.name, table.columns, join(parsed.dir, part.file), settings);
          ctx.logger.info(
            { table: table.name, partition: part.partition, rows: part.rows, done: `${index + 1}/${table.partitions.length}` },
            'restore: table partition inserted',
          );
        }
      }
    } finally {
      for (const v of views) {
        await setAttached(ch, ctx.http.database, v, true).catch((err: unknown) => {
          ctx.logger.error({ view: v, err }, `restore: could not attach the materialized view again: run ATTACH TABLE ${ctx.http.database}.${v}`);
        });
      }
    }
    if (!parsed.only) await skipCopiedRecords(ctx, manifest);
    ctx.logger.info({ dir: parsed.dir }, 'restore complete');
    io.stdout(summary('restored', manifest));
    return EXIT_OK;
  } finally {
    await ch.close();
  }
}

/**
 * After a whole restore, `billing_ledger` and `audit_log` already hold every record of their
 * topics: the processor's copier groups start at the topics' end, or they would insert every
 * record a second time (readers take one row per id, but the tables would hold each row twice).
 * A group that already has offsets on these topics (a processor ran on them) is left alone.
 */
async function skipCopiedRecords(ctx: Context, manifest: BackupManifest): Promise<void> {
  const copies = [
    { name: TOPICS.billingLedger.name, group: ctx.config.PROCESSOR_LEDGER_GROUP },
    { name: TOPICS.auditLog.name, group: ctx.config.PROCESSOR_AUDIT_GROUP },
  ].filter((c) => manifest.kafka.topics.some((t) => t.name === c.name));
  for (const { name, group } of copies) {
    const topic = `${ctx.config.KAFKA_TOPIC_PREFIX}${name}`;
    const committed = await committedOffsets(ctx.kafka, group, topic);
    if ([...committed.values()].some((o) => o !== '-1')) {
      ctx.logger.warn({ topic: name, group }, 'restore: the copier group already has offsets; left as they are (it may copy records twice)');
      continue;
    }
    await skipGroupToEnd(ctx.kafka, group, topic);
    ctx.logger.info({ topic: name, group }, 'restore: copier group starts after the restored records');
  }
}

/** Everything a restore needs is there, and (unless forced) holds nothing yet; refused before any write. */
async function checkTarget(ctx: Context, ch: ReturnType<typeof clickhouseOf>, manifest: BackupManifest, force: boolean): Promise<void> {
  const prefix = ctx.config.KAFKA_TOPIC_PREFIX;
  const notEmpty: string[] = [];
  for (const t of manifest.kafka.topics) {
    const ranges = await targetOffsets(ctx.kafka, `${prefix}${t.name}`);
    if (ranges.length < t.partitions)
      throw new InputError(`topic ${prefix}${t.name} has ${ranges.length} partitions, the backup ${t.partitions}: records keep their partition`);
    if (ranges.some((r) => r.high > r.low)) notEmpty.push(`topic ${prefix}${t.name}`);
  }

  // Nothing of ClickHouse is asked when no table is restored (--only kafka).
  if (manifest.clickhouse.tables.length > 0) {
    const applied = new Set(await appliedMigrationVersions(ch, ctx.http.database));
    const missing = manifest.clickhouse.migrations.filter((v) => !applied.has(v));
    if (missing.length > 0)
      throw new InputError(
        `database ${ctx.http.database} lacks migration(s) ${missing.join(', ')} of the backup: run \`ingest setup\` of this version (or newer) first`,
      );
    const present = new Set((await dataTables(ch, ctx.http.database)).map((t) => t.name));
    for (const table of manifest.clickhouse.tables) {
      if (table.name === MIGRATIONS_TABLE) continue;
      if (!present.has(table.name)) throw new InputError(`table ${ctx.http.database}.${table.name} does not exist: run \`ingest setup\` first`);
      const columns = new Set((await insertableColumns(ch, ctx.http.database, table.name)).map((c) => c.name));
      const absent = table.columns.filter((c) => !columns.has(c.name)).map((c) => c.name);
      if (absent.length > 0) throw new InputError(`table ${ctx.http.database}.${table.name} has no column(s) ${absent.join(', ')} of the backup`);
      if ((await rowCount(ch, ctx.http.database, table.name)) > 0) notEmpty.push(`table ${ctx.http.database}.${table.name}`);
    }
  }
  if (notEmpty.length > 0 && !force)
    throw new InputError(`the target is not empty (${notEmpty.join(', ')}): restore into empty topics and tables, or pass --force to add to them`);
  if (notEmpty.length > 0) ctx.logger.warn({ notEmpty }, 'restore: adding to a target that is not empty (--force)');
}
