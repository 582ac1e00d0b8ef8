import { ADMIN_ROLE_IDS } from '@ingest/schemas';
import type { Flag } from './crm-commands.js';

/**
 * The admin CLI's commands for named admins, the audit log and owner removal / password reset
 * (issue 17). Parsing, requests and output are pure, like the other command modules. Tokens and
 * passwords never come from argv (anyone on the machine sees it in `ps`).
 */
export type AdminsCommand =
  | { kind: 'admins list' }
  | { kind: 'admins create'; name: string; role: string }
  | { kind: 'admins revoke'; credentialId: string }
  | { kind: 'audit'; accountId?: string; actor?: string; action?: string; from?: string; to?: string; limit?: string; cursor?: string }
  | { kind: 'owners remove'; accountId: string; email: string }
  | { kind: 'owners remove-second-factor'; accountId: string; email: string }
  /** `password` is filled by runCli from OWNER_PASSWORD or stdin; absent: the API generates one. */
  | { kind: 'owners reset-password'; accountId: string; email: string; passwordStdin: boolean; password?: string };

const KINDS: ReadonlySet<string> = new Set<AdminsCommand['kind']>([
  'admins list',
  'admins create',
  'admins revoke',
  'audit',
  'owners remove',
  'owners remove-second-factor',
  'owners reset-password',
]);

export function isAdminsCommand(command: { kind: string }): command is AdminsCommand {
  return KINDS.has(command.kind);
}

export const ADMINS_USAGE = `  owners remove <accountId> <email>                        remove a dashboard owner (their sessions end)
  owners reset-password <accountId> <email> [--password-stdin]
                                                           set an owner's password (OWNER_PASSWORD, stdin, or
                                                           generated and shown once); their sessions end
  owners remove-second-factor <accountId> <email>          remove an owner's authenticator app and recovery
                                                           codes (they lost both); they enrol again
  admins list                                              admin credentials: name, role, prefix (role admin)
  admins create <name> --role operator|admin               a new admin credential; its token is shown once. A
                                                           second one for the same name rotates its token
  admins revoke <credentialId>                             revoke an admin credential
  audit [--account <id>] [--actor <name|email>] [--action <a>] [--from <iso>] [--to <iso>]
        [--limit <n>] [--cursor <c>]                       the audit log, newest first (nextCursor pages on)`;

export interface AdminsFlags {
  role?: string;
  account?: string;
  actor?: string;
  action?: string;
  from?: string;
  to?: string;
  limit?: string;
  cursor?: string;
  'password-stdin'?: boolean;
}

export interface AdminsParseContext {
  flags: AdminsFlags;
  allow(...flags: Flag[]): void;
  args(names: string[]): string[];
  usageError(message: string): Error;
}

export function parseAdminsCommand(group: string, action: string, ctx: AdminsParseContext): AdminsCommand | undefined {
  const { flags } = ctx;
  switch (`${group} ${action}`) {
    case 'admins list':
      ctx.allow();
      ctx.args([]);
      return { kind: 'admins list' };
    case 'admins create': {
      ctx.allow('role');
      const [name = ''] = ctx.args(['name']);
      if (!flags.role || !(ADMIN_ROLE_IDS as readonly string[]).includes(flags.role))
        throw ctx.usageError(`admins create needs --role ${ADMIN_ROLE_IDS.join('|')}`);
      return { kind: 'admins create', name, role: flags.role };
    }
    case 'admins revoke': {
      ctx.allow();
      const [credentialId = ''] = ctx.args(['credentialId']);
      return { kind: 'admins revoke', credentialId };
    }
    case 'owners remove': {
      ctx.allow();
      const [accountId = '', email = ''] = ctx.args(['accountId', 'email']);
      return { kind: 'owners remove', accountId, email };
    }
    case 'owners remove-second-factor': {
      ctx.allow();
      const [accountId = '', email = ''] = ctx.args(['accountId', 'email']);
      return { kind: 'owners remove-second-factor', accountId, email };
    }
    case 'owners reset-password': {
      ctx.allow('password-stdin');
      const [accountId = '', email = ''] = ctx.args(['accountId', 'email']);
      return { kind: 'owners reset-password', accountId, email, passwordStdin: flags['password-stdin'] === true };
    }
    default:
      return undefined;
  }
}

/** `audit` is a group without an action: its positional arguments are refused by the caller. */
export function parseAuditCommand(ctx: AdminsParseContext): AdminsCommand {
  ctx.allow('account', 'actor', 'action', 'from', 'to', 'limit', 'cursor');
  const { flags } = ctx;
  for (const name of ['from', 'to'] as const) {
    const value = flags[name];
    if (value !== undefined && !Number.isFinite(Date.parse(value))) throw ctx.usageError(`--${name} must be an ISO 8601 time, e.g. 2026-01-31T00:00:00Z`);
  }
  if (flags.limit !== undefined && !/^[1-9][0-9]{0,2}$/.test(flags.limit)) throw ctx.usageError('--limit must be a number from 1 to 500');
  const picked = {
    accountId: flags.account,
    actor: flags.actor,
    action: flags.action,
    from: flags.from,
    to: flags.to,
    limit: flags.limit,
    cursor: flags.cursor,
  };
  return { kind: 'audit', ...Object.fromEntries(Object.entries(picked).filter(([, v]) => v !== undefined)) };
}

export function adminsRequestFor(command: AdminsCommand): { method: 'GET' | 'POST' | 'DELETE'; path: string; body?: unknown } {
  const owner = (accountId: string, email: string) => `/admin/v1/accounts/${encodeURIComponent(accountId)}/owners/${encodeURIComponent(email)}`;
  switch (command.kind) {
    case 'admins list':
      return { method: 'GET', path: '/admin/v1/admins' };
    case 'admins create':
      return { method: 'POST', path: '/admin/v1/admins', body: { name: command.name, role: command.role } };
    case 'admins revoke':
      return { method: 'POST', path: `/admin/v1/admins/${encodeURIComponent(command.credentialId)}/revoke` };
    case 'owners remove':
      return { method: 'DELETE', path: owner(command.accountId, command.email) };
    case 'owners remove-second-factor':
      return { method: 'POST', path: `${owner(command.accountId, command.email)}/remove-second-factor` };
    case 'owners reset-password':
      return {
        method: 'POST',
        path: `${owner(command.accountId, command.email)}/reset-password`,
        body: command.password ? { password: command.password } : {},
      };
    case 'audit': {
      const { kind: _kind, ...filters } = command;
      const query = new URLSearchParams(filters as Record<string, string>);
      return { method: 'GET', path: `/admin/v1/audit${query.size > 0 ? `?${query}` : ''}` };
    }
  }
}

interface AdminOut {
  id: string;
  name: string;
  role: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
  source: string;
}

interface AuditOut {
  at: string;
  actor: { type: string; name: string; role?: string };
  action: string;
  accountId: string | null;
  target: string | null;
  ip: string;
}

export function formatAdminsSuccess(command: AdminsCommand, body: unknown, table: (rows: string[][]) => string): string {
  switch (command.kind) {
    case 'admins list': {
      const { admins } = body as { admins: AdminOut[] };
      return table([
        ['ID', 'NAME', 'ROLE', 'PREFIX', 'CREATED', 'STATUS'],
        ...admins.map((a) => [
          a.id,
          a.name,
          a.role,
          a.prefix || '-',
          a.createdAt || '(environment)',
          a.revokedAt === null ? 'active' : `revoked ${a.revokedAt}`,
        ]),
      ]);
    }
    case 'admins create': {
      const { token, admin } = body as { token: string; admin: AdminOut };
      return [
        `created admin credential ${admin.id} for ${admin.name} (role ${admin.role})`,
        '',
        `  ${token}`,
        '',
        'Store this token now: it will not be shown again.',
        '',
      ].join('\n');
    }
    case 'admins revoke': {
      const admin = body as AdminOut;
      return `revoked admin credential ${admin.id} of ${admin.name} at ${admin.revokedAt ?? '?'}\n`;
    }
    case 'owners remove': {
      const { owner } = body as { owner: { email: string; accountId: string } };
      return `removed dashboard owner ${owner.email} of account ${owner.accountId}\n`;
    }
    case 'owners remove-second-factor': {
      const { owner } = body as { owner: { email: string } };
      return `removed the second factor of ${owner.email}; they sign in with their password and can enrol again\n`;
    }
    case 'owners reset-password': {
      const { owner, password } = body as { owner: { email: string }; password?: string };
      const lines = [`set a new password for ${owner.email}; their sessions have ended`];
      if (password) lines.push('', `  password: ${password}`, '', 'Hand this password over now: it will not be shown again.');
      return `${lines.join('\n')}\n`;
    }
    case 'audit': {
      const { records, nextCursor } = body as { records: AuditOut[]; nextCursor: string | null };
      if (records.length === 0) return 'no audit records\n';
      const rows = table([
        ['AT', 'ACTOR', 'ACTION', 'ACCOUNT', 'TARGET', 'FROM'],
        ...records.map((r) => [r.at, `${r.actor.type}:${r.actor.name}`, r.action, r.accountId ?? '-', r.target ?? '-', r.ip]),
      ]);
      return nextCursor ? `${rows}more: --cursor ${nextCursor}\n` : rows;
    }
  }
}
