/**
 * `ingest clickhouse upgrade-events`: upgrades `events` from the 18.16-compatible shape to the
 * current-server shape, online (docs/clickhouse.md, "Upgrading `events` to the current shape").
 * Prints one line saying what it did; on servers older than 24.8 it says there is nothing to do.
 */
import { ClickHouseConfig, CommonConfig, createClickHouse, createLogger, loadConfig } from '@ingest/platform';
import { upgradeEvents, type UpgradeEventsResult } from '@ingest/domain';
import { Type } from '@sinclair/typebox';
import { type Command, EXIT_OK, HELP, parseCommandLine, UsageError } from '../frame.js';

const ClickHouseCommandConfig = Type.Object({ ...CommonConfig, ...ClickHouseConfig });

export const CLICKHOUSE_COMMAND: Command<'upgrade-events'> = {
  usage: `usage: ingest clickhouse upgrade-events
  Upgrades the events table to the current-server shape (DateTime64 times, LowCardinality,
  codecs, skip indexes, user_id/anonymous_id/context) on ClickHouse 24.8 and later, while events
  keep arriving; once. On older servers (18.16) it changes nothing. Configured by CLICKHOUSE_URL,
  CLICKHOUSE_USER, CLICKHOUSE_PASSWORD, CLICKHOUSE_DATABASE.
`,
  parse(argv) {
    const { values, positionals } = parseCommandLine(argv, { help: { type: 'boolean', short: 'h' } });
    if (values.help || positionals[0] === undefined || positionals[0] === 'help') return HELP;
    if (positionals[0] !== 'upgrade-events' || positionals.length > 1) throw new UsageError(`unknown clickhouse command: ${positionals.join(' ')}`);
    return 'upgrade-events';
  },
  async run(_parsed, io) {
    const config = loadConfig(ClickHouseCommandConfig, io.env);
    const logger = createLogger({ service: 'cli', level: config.LOG_LEVEL });
    const ch = createClickHouse({
      url: config.CLICKHOUSE_URL,
      username: config.CLICKHOUSE_USER,
      password: config.CLICKHOUSE_PASSWORD,
      database: config.CLICKHOUSE_DATABASE,
      // A partition's INSERT … SELECT can take minutes on a large table.
      requestTimeoutMs: 3_600_000,
      longRunning: true,
    });
    try {
      io.stdout(`${describeUpgrade(await upgradeEvents(ch, { logger }))}\n`);
      return EXIT_OK;
    } finally {
      await ch.close();
    }
  },
};

export function describeUpgrade(result: UpgradeEventsResult): string {
  switch (result.status) {
    case 'not-for-this-server':
      return `nothing to upgrade: the current events shape needs ClickHouse >= ${result.needs}; this server (${result.serverVersion}) keeps the 18.16-compatible shape`;
    case 'already-current':
      return `nothing to upgrade: events already has the current shape (ClickHouse ${result.serverVersion})`;
    case 'left-for-the-command':
      return `events has the 18.16-compatible shape and ${result.rows} rows: run ingest clickhouse upgrade-events`;
    case 'upgraded':
      return `events upgraded to the current shape: ${result.partitions} partitions copied, switched at ${new Date(result.switchedAtMs).toISOString()}; the legacy table is kept as events_before_upgrade (${result.rows} rows): drop it once you have checked`;
  }
}
