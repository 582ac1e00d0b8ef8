/**
 * `ingest`, the operator command of the app image, and its subcommands (docs/runbook.md names
 * them; a unit test checks every one it names is here and in the image). Each subcommand is a
 * command of the one frame (frame.ts: parsing, output, exit codes) and loads its code only when
 * chosen, so `ingest healthcheck` does not evaluate the Kafka client.
 */
import { EXIT_OK, EXIT_USAGE, type Io, isHelp, runCommand } from './frame.js';

export type { Io } from './frame.js';
export { OPS_ENDPOINTS } from './healthcheck.js';

export interface Subcommand {
  summary: string;
  run: (args: readonly string[], io: Io) => Promise<number>;
}

export const SUBCOMMANDS: Record<string, Subcommand> = {
  admin: {
    summary: 'accounts, plans, API keys, owners, CRM mappings and credentials, the billing ledger (the admin API; ADMIN_URL, ADMIN_TOKEN)',
    // The process's fetch; tests call runCli with their own.
    run: async (args, io) => runCommand((await import('./admin/cli.js')).ADMIN_COMMAND, args, { ...io, fetch: globalThis.fetch }),
  },
  deadletters: {
    summary: 'list and replay dead letters (events.deadletter, --crm: crm.deadletter; KAFKA_BROKERS, KAFKA_TOPIC_PREFIX)',
    run: async (args, io) => runCommand((await import('./dead-letter/cli.js')).DEADLETTERS_COMMAND, args, io),
  },
  'credentials-key': {
    summary:
      "crm-sink's CRM credential keys: generate a pair, count credentials per key, rotate (re-wrap every credential; KAFKA_*, CRM_CREDENTIALS_PRIVATE_KEY_FILES)",
    run: async (args, io) => runCommand((await import('./credentials-key/cli.js')).CREDENTIALS_KEY_COMMAND, args, io),
  },
  setup: {
    summary: 'create the Kafka topics and apply the ClickHouse migrations (idempotent)',
    run: async (args, io) => runCommand((await import('./setup.js')).SETUP_COMMAND, args, io),
  },
  clickhouse: {
    summary: 'upgrade-events: the events table to the current-server shape, online, once (CLICKHOUSE_*; docs/clickhouse.md)',
    run: async (args, io) => runCommand((await import('./clickhouse/cli.js')).CLICKHOUSE_COMMAND, args, io),
  },
  backup: {
    summary: 'back up every control topic, billing.ledger, audit.log and every ClickHouse table into a directory (KAFKA_*, CLICKHOUSE_*)',
    run: async (args, io) => runCommand((await import('./backup/cli.js')).BACKUP_COMMAND, args, io),
  },
  restore: {
    summary: 'write a backup back into empty topics and tables (after `ingest setup`, before the services start)',
    run: async (args, io) => runCommand((await import('./backup/cli.js')).RESTORE_COMMAND, args, io),
  },
  healthcheck: {
    summary: "ask this container's service for /healthz (the image's HEALTHCHECK; SERVICE picks the ops port)",
    run: async (args, io) => runCommand((await import('./healthcheck.js')).HEALTHCHECK_COMMAND, args, io),
  },
};

export function usage(): string {
  const width = Math.max(...Object.keys(SUBCOMMANDS).map((n) => n.length));
  const lines = Object.entries(SUBCOMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: ingest <command> [arguments]   (in a checkout: npm run ingest -- <command> …)\n\ncommands:\n${lines.join('\n')}\n  ${'help'.padEnd(width)}  this text\n\n"ingest <command> help" shows a command's own options.\n`;
}

/** Runs `ingest <command> …`; resolves to the exit code (0 done, 1 failed, 2 usage). */
export async function runIngest(argv: readonly string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (isHelp(name)) {
    io.stdout(usage());
    return EXIT_OK;
  }
  const command = SUBCOMMANDS[name ?? ''];
  if (!command) {
    io.stderr(`error: unknown command "${name}"\n\n${usage()}`);
    return EXIT_USAGE;
  }
  return command.run(rest, io);
}
