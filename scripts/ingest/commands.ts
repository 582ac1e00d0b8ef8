/**
 * The subcommands of `ingest`, the operator command of the app image (docs/runbook.md names
 * them; a unit test checks every one it names is here and in the image). Each loads its code
 * only when chosen, so `ingest healthcheck` does not evaluate the Kafka client.
 */
export interface Io {
  env: Record<string, string | undefined>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
}

export interface Subcommand {
  summary: string;
  run: (args: string[], io: Io) => Promise<number>;
}

export const SUBCOMMANDS: Record<string, Subcommand> = {
  admin: {
    summary: 'accounts, plans, API keys, owners, CRM mappings and credentials, the billing ledger (the admin API; ADMIN_URL, ADMIN_TOKEN)',
    run: async (args, io) => (await import('../admin/cli.js')).runCli(args, { ...io, fetch: globalThis.fetch }),
  },
  deadletters: {
    summary: 'list and replay dead letters (events.deadletter, --crm: crm.deadletter; KAFKA_BROKERS, KAFKA_TOPIC_PREFIX)',
    run: async (args, io) => (await import('../deadletters/cli.js')).runCli(args, io),
  },
  'credentials-key': {
    summary:
      "crm-sink's CRM credential keys: generate a pair, count credentials per key, rotate (re-wrap every credential; KAFKA_*, CRM_CREDENTIALS_PRIVATE_KEY_FILES)",
    run: async (args, io) => (await import('../credentials-key/cli.js')).runCredentialsKey(args, io),
  },
  setup: {
    summary: 'create the Kafka topics and apply the ClickHouse migrations (idempotent)',
    run: async (args, io) => {
      if (args.length > 0) {
        io.stderr('usage: ingest setup (no arguments; configured by the environment)\n');
        return 2;
      }
      // scripts/setup.ts does its work when loaded and throws on failure.
      await import('../setup.js');
      return 0;
    },
  },
  healthcheck: {
    summary: "ask this container's service for /healthz (the image's HEALTHCHECK; SERVICE picks the ops port)",
    run: async (_args, io) => (await import('./healthcheck.js')).runHealthcheck(io.env, io),
  },
};

export function usage(): string {
  const width = Math.max(...Object.keys(SUBCOMMANDS).map((n) => n.length));
  const lines = Object.entries(SUBCOMMANDS).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `usage: ingest <command> [arguments]   (in a checkout: npm run ingest -- <command> …)\n\ncommands:\n${lines.join('\n')}\n  ${'help'.padEnd(width)}  this text\n\n"ingest <command> help" shows a command's own options.\n`;
}

export async function runIngest(argv: string[], io: Io): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    io.stdout(usage());
    return 0;
  }
  const command = SUBCOMMANDS[name];
  if (!command) {
    io.stderr(`unknown command "${name}"\n\n${usage()}`);
    return 2;
  }
  return command.run(rest, io);
}
