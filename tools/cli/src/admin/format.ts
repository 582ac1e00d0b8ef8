import { type BillingLedgerRecord, ledgerCsv } from '@ingest/domain';
import type { Command } from './cli.js';
import { table } from '../frame.js';
import { formatAdminsSuccess, isAdminsCommand } from './admins-commands.js';
import { formatReadersSuccess, isReadersCommand } from './readers-commands.js';
import { formatCrmSuccess, isCrmCommand } from './crm-commands.js';
import { formatEraseSuccess, isEraseCommand } from './erase-commands.js';

/** Human-readable output of the admin CLI. Inputs are the admin API's JSON bodies. */
interface AccountOut {
  id: string;
  name: string;
  plan: string;
  createdAt: string;
  updatedAt: string;
  suspension?: { reason: string; suspendedAt: string };
  allowedOrigins?: string[];
  publishableEventIds?: string;
}

interface KeyOut {
  id: string;
  accountId: string;
  name: string;
  prefix: string;
  createdAt: string;
  revokedAt: string | null;
  scopes?: string[];
  type?: string;
}

export function formatSuccess(command: Exclude<Command, { kind: 'help' }>, body: unknown): string {
  if (isCrmCommand(command)) return formatCrmSuccess(command, body, table);
  if (isAdminsCommand(command)) return formatAdminsSuccess(command, body, table);
  if (isReadersCommand(command)) return formatReadersSuccess(command, body);
  if (isEraseCommand(command)) return formatEraseSuccess(command, body);
  switch (command.kind) {
    case 'accounts create':
      return `created account ${accountBlock(body as AccountOut)}`;
    case 'accounts show':
      return `account ${accountBlock(body as AccountOut)}`;
    case 'accounts list': {
      const { accounts } = body as { accounts: AccountOut[] };
      if (accounts.length === 0) return 'no accounts\n';
      return table([['ID', 'NAME', 'PLAN', 'CREATED'], ...accounts.map((a) => [a.id, a.name, a.plan, a.createdAt])]);
    }
    case 'accounts suspend': {
      const account = body as AccountOut;
      return `account ${account.id} is suspended since ${account.suspension?.suspendedAt ?? '?'}: ${account.suspension?.reason ?? ''}\n`;
    }
    case 'accounts resume':
      return `account ${(body as AccountOut).id} is active\n`;
    case 'origins set': {
      const account = body as AccountOut;
      const origins = account.allowedOrigins ?? [];
      return origins.length === 0
        ? `account ${account.id} allows no browser origins\n`
        : `account ${account.id} allows browser origins:\n${origins.map((o) => `  ${o}\n`).join('')}`;
    }
    case 'publishable-ids set': {
      const account = body as AccountOut;
      return account.publishableEventIds === 'shared'
        ? `account ${account.id}: eventIds of publishable keys share the secret keys' space\n`
        : `account ${account.id}: eventIds of publishable keys are a namespace of their own (pk:)\n`;
    }
    case 'plan set': {
      const account = body as AccountOut;
      return `account ${account.id} is now on plan ${account.plan}\n`;
    }
    case 'keys create': {
      const { apiKey, key } = body as { apiKey: string; key: KeyOut };
      return [
        `created API key ${key.id} (${key.name}) for account ${key.accountId}`,
        `  type: ${key.type ?? 'secret'}, scopes: ${(key.scopes ?? []).join(', ')}`,
        '',
        `  ${apiKey}`,
        '',
        'Store this key now: it will not be shown again.',
        '',
      ].join('\n');
    }
    case 'keys list': {
      const { keys } = body as { keys: KeyOut[] };
      if (keys.length === 0) return 'no API keys\n';
      return table([
        ['ID', 'NAME', 'PREFIX', 'TYPE', 'SCOPES', 'CREATED', 'STATUS'],
        ...keys.map((k) => [k.id, k.name, k.prefix, k.type ?? 'secret', (k.scopes ?? []).join(','), k.createdAt, status(k)]),
      ]);
    }
    case 'keys revoke': {
      const key = body as KeyOut;
      return `revoked API key ${key.id} (${key.name}) of account ${key.accountId} at ${key.revokedAt ?? '?'}\n`;
    }
    case 'owners create': {
      const { owner, password } = body as { owner: OwnerOut; password?: string };
      const lines = [`created dashboard owner ${owner.email} (${owner.id}) for account ${owner.accountId}`];
      if (password) lines.push('', `  password: ${password}`, '', 'Hand this password over now: it will not be shown again.');
      return `${lines.join('\n')}\n`;
    }
    case 'owners list': {
      const { owners } = body as { owners: OwnerOut[] };
      if (owners.length === 0) return 'no dashboard owners\n';
      return table([['ID', 'EMAIL', 'CREATED'], ...owners.map((o) => [o.id, o.email, o.createdAt])]);
    }
    case 'ledger': {
      const { records } = body as { records: BillingLedgerRecord[] };
      if (command.csv) return ledgerCsv(records);
      if (records.length === 0) return 'no ledger records\n';
      return table([
        ['PERIOD', 'ACCOUNT', 'KIND', 'AT', 'PLAN', 'LIMIT', 'CHARGED', 'REFUSED'],
        ...records.map((r) => [
          r.period,
          r.accountId,
          r.kind === 'plan_changed' ? `plan ${r.previousPlan ?? '?'} -> ${r.plan}` : 'month closed',
          r.at,
          r.plan,
          String(r.limit),
          String(r.eventsCharged),
          String(r.overageRefused),
        ]),
      ]);
    }
  }
}

interface OwnerOut {
  id: string;
  accountId: string;
  email: string;
  createdAt: string;
}

interface ProblemOut {
  title?: unknown;
  detail?: unknown;
  requestId?: unknown;
  errors?: { field?: string; code?: string; message?: string }[];
}

/** `error: <status> <title>: <detail>`, then one line per field error. */
export function formatProblem(status: number, statusText: string, body: unknown): string {
  const problem = isObject(body) ? (body as ProblemOut) : {};
  const title = typeof problem.title === 'string' ? problem.title : statusText || 'request failed';
  const detail = typeof problem.detail === 'string' ? `: ${problem.detail}` : '';
  const lines = [`error: ${status} ${title}${detail}`];
  for (const e of Array.isArray(problem.errors) ? problem.errors : []) {
    lines.push(`  ${e.field ?? '/'}: ${e.message ?? 'is invalid'}${e.code ? ` (${e.code})` : ''}`);
  }
  if (typeof problem.requestId === 'string') lines.push(`  requestId: ${problem.requestId}`);
  return `${lines.join('\n')}\n`;
}

function accountBlock(a: AccountOut): string {
  const suspended = a.suspension ? `  status:  suspended since ${a.suspension.suspendedAt}: ${a.suspension.reason}\n` : '';
  const origins = a.allowedOrigins?.length ? `  origins: ${a.allowedOrigins.join(' ')}\n` : '';
  return `${a.id}\n  name:    ${a.name}\n  plan:    ${a.plan}\n${suspended}${origins}  created: ${a.createdAt}\n  updated: ${a.updatedAt}\n`;
}

function status(k: KeyOut): string {
  return k.revokedAt === null ? 'active' : `revoked ${k.revokedAt}`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
