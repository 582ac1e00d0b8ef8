/**
 * The admin CLI's commands for an account's ClickHouse reader (docs/clickhouse-readers.md): a
 * thin client of /admin/v1/accounts/{id}/clickhouse-reader. Parsing, requests and output are
 * pure, like the other command modules. The password is printed once, on create and rotate.
 */
export type ReadersCommand = { kind: 'reader show' | 'reader create' | 'reader rotate' | 'reader remove'; accountId: string };

const KINDS: ReadonlySet<string> = new Set<ReadersCommand['kind']>(['reader show', 'reader create', 'reader rotate', 'reader remove']);

export function isReadersCommand(command: { kind: string }): command is ReadersCommand {
  return KINDS.has(command.kind);
}

export const READERS_USAGE = `  reader show|create|rotate|remove <accountId>             the account's ClickHouse reader for its data engineers:
                                                           its rows only, read-only, bounded; the password is
                                                           shown once (create, rotate). Current servers only`;

export function parseReadersCommand(group: string, action: string, ctx: { allow(): void; args(names: string[]): string[] }): ReadersCommand | undefined {
  const kind = `${group} ${action}`;
  if (!KINDS.has(kind)) return undefined;
  ctx.allow();
  const [accountId = ''] = ctx.args(['accountId']);
  return { kind: kind as ReadersCommand['kind'], accountId };
}

export function readersRequestFor(command: ReadersCommand): { method: 'GET' | 'POST' | 'DELETE'; path: string } {
  const path = `/admin/v1/accounts/${encodeURIComponent(command.accountId)}/clickhouse-reader`;
  switch (command.kind) {
    case 'reader show':
      return { method: 'GET', path };
    case 'reader create':
      return { method: 'POST', path };
    case 'reader rotate':
      return { method: 'POST', path: `${path}/rotate` };
    case 'reader remove':
      return { method: 'DELETE', path };
  }
}

interface ReaderOut {
  accountId: string;
  user: string;
  database: string;
  tables: string[];
  settings: Record<string, number>;
  quota: Record<string, number>;
  exists: boolean;
  password?: string;
}

export function formatReadersSuccess(command: ReadersCommand, body: unknown): string {
  const reader = body as ReaderOut;
  const limits = `limits: ${Object.entries(reader.settings)
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}; per ${reader.quota.intervalSeconds ?? '?'} s: ${Object.entries(reader.quota)
    .filter(([k]) => k !== 'intervalSeconds')
    .map(([k, v]) => `${k}=${v}`)
    .join(', ')}`;
  switch (command.kind) {
    case 'reader show':
      return reader.exists
        ? `ClickHouse reader ${reader.user} of account ${reader.accountId}: tables ${reader.database}.{${reader.tables.join(',')}}\n${limits}\n`
        : `account ${reader.accountId} has no ClickHouse reader\n`;
    case 'reader create':
    case 'reader rotate':
      return [
        `${command.kind === 'reader create' ? 'created' : 'new password for'} ClickHouse reader ${reader.user} of account ${reader.accountId} (database ${reader.database})`,
        '',
        `  user:     ${reader.user}`,
        `  password: ${reader.password ?? '?'}`,
        '',
        'Hand this password over now: it will not be shown again.',
        limits,
        '',
      ].join('\n');
    case 'reader remove':
      return `removed ClickHouse reader ${reader.user} of account ${reader.accountId}\n`;
  }
}
