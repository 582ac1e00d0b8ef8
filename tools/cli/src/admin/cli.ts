import { readFile } from 'node:fs/promises';
import { text as readAll } from 'node:stream/consumers';
import { API_KEY_SCOPE_IDS, API_KEY_TYPE_IDS, PLAN_IDS, type PlanId, PUBLISHABLE_EVENT_ID_MODES, type PublishableEventIdMode } from '@ingest/schemas';
import { CRM_ENV_USAGE, CRM_USAGE, type CrmCommand, crmRequestFor, type Flag, InputError, isCrmCommand, loadBody, parseCrmCommand } from './crm-commands.js';
import { ADMINS_USAGE, type AdminsCommand, adminsRequestFor, isAdminsCommand, parseAdminsCommand, parseAuditCommand } from './admins-commands.js';
import { isReadersCommand, parseReadersCommand, READERS_USAGE, type ReadersCommand, readersRequestFor } from './readers-commands.js';
import { formatProblem, formatSuccess } from './format.js';
import { ERASE_TIMEOUT_MS, ERASE_USAGE, type EraseCommand, eraseRequestFor, isEraseCommand, parseEraseCommand } from './erase-commands.js';
import { type Command as FrameCommand, describeError, EXIT_FAILED, EXIT_OK, HELP, type Io, parseCommandLine, runCommand, UsageError } from '../frame.js';

/**
 * The admin CLI (`npm run admin -- <command>`): a thin client of the admin HTTP API. Parsing,
 * the request for each command and the output are pure functions; `runCli` wires them to
 * fetch and the terminal, so tests drive it with a fake fetch as well as the real thing.
 */
export type CoreCommand =
  | { kind: 'accounts create'; name: string; plan: PlanId }
  | { kind: 'accounts list' }
  | { kind: 'accounts show'; accountId: string }
  | { kind: 'plan set'; accountId: string; plan: PlanId }
  | { kind: 'keys create'; accountId: string; name?: string; scopes?: string[]; type?: string }
  | { kind: 'accounts suspend'; accountId: string; reason: string }
  | { kind: 'accounts resume'; accountId: string; reason?: string }
  /** An empty list removes every origin. */
  | { kind: 'origins set'; accountId: string; origins: string[] }
  | { kind: 'publishable-ids set'; accountId: string; mode: PublishableEventIdMode }
  | { kind: 'keys list'; accountId: string }
  | { kind: 'keys revoke'; accountId: string; keyId: string }
  /** `password` is filled by runCli from OWNER_PASSWORD or stdin; absent: the API generates one. */
  | { kind: 'owners create'; accountId: string; email: string; passwordStdin: boolean; password?: string }
  | { kind: 'owners list'; accountId: string }
  | { kind: 'ledger'; accountId?: string; period?: string; csv: boolean };

export type Command = { kind: 'help' } | CoreCommand | CrmCommand | AdminsCommand | ReadersCommand | EraseCommand;

export interface Invocation {
  command: Command;
  json: boolean;
}

export { UsageError };

export const USAGE = `usage: npm run admin -- <command> [--json]

commands:
  accounts create --name <name> [--plan free|pro|growth]   create an account (plan: free)
  accounts list                                            list accounts
  accounts show <accountId>                                show one account
  accounts suspend <accountId> --reason <text>             suspend: its keys answer 403, dashboard read-only,
                                                           jobs stopped, CRM sync held (reason kept, not shown to callers)
  accounts resume <accountId> [--reason <text>]            lift a suspension
  origins set <accountId> [<origin> ...]                   browser origins for publishable keys (none: remove all)
  publishable-ids set <accountId> separate|shared          eventIds of publishable keys: their own namespace
                                                           (separate, the default) or the secret keys' (shared)
  plan set <accountId> <plan>                              change an account's plan
  keys create <accountId> [--name <name>] [--scopes <list>] [--type secret|publishable]
                                                           create an API key (shown once); scopes, comma-separated:
                                                           ${API_KEY_SCOPE_IDS.join(', ')} (default events:write,usage:read);
                                                           publishable: events:write only, for browsers
  keys list <accountId>                                    list an account's keys
  keys revoke <accountId> <keyId>                          revoke a key
  owners create <accountId> <email> [--password-stdin]     create a dashboard owner; the password comes from
                                                           OWNER_PASSWORD, stdin, or is generated and shown once
  owners list <accountId>                                  list an account's dashboard owners
${ADMINS_USAGE}
${READERS_USAGE}
${ERASE_USAGE}
  ledger [--account <accountId>] [--period YYYYMM] [--csv] the billing ledger: closed months and plan changes
${CRM_USAGE}
  help                                                     this text

options:
  --json   machine-readable output (the API's JSON)

environment:
  ADMIN_URL    admin API base URL (default http://127.0.0.1:3200)
  ADMIN_TOKEN  admin bearer token (required): the gateway's ADMIN_TOKEN or a named admin's token
  OWNER_PASSWORD  password for "owners create" and "owners reset-password" (at least 12 characters)
${CRM_ENV_USAGE}
`;

export function parseInvocation(argv: readonly string[]): Invocation {
  const { values, positionals } = parseCommandLine(argv, OPTIONS);
  const json = values.json === true;
  const [group, action, ...rest] = positionals;
  if (values.help || group === undefined || group === 'help') return { command: { kind: 'help' }, json };

  const allow = (...flags: Flag[]) => {
    for (const flag of FLAGS) {
      if (values[flag] !== undefined && !flags.includes(flag)) throw new UsageError(`--${flag} does not apply to "${group} ${action ?? ''}"`.trim());
    }
  };
  const args = (names: string[]): string[] => {
    if (rest.length !== names.length) {
      throw new UsageError(`"${group} ${action}" takes ${names.length === 0 ? 'no arguments' : names.map((n) => `<${n}>`).join(' ')}`);
    }
    for (const [i, value] of rest.entries()) if (value.trim() === '') throw new UsageError(`<${names[i]}> must not be empty`);
    return rest;
  };

  switch (`${group} ${action ?? ''}`) {
    case 'accounts create': {
      allow('name', 'plan');
      args([]);
      if (values.name === undefined || values.name.trim() === '') throw new UsageError('accounts create needs --name <name>');
      return { command: { kind: 'accounts create', name: values.name, plan: plan(values.plan ?? 'free') }, json };
    }
    case 'accounts list':
      allow();
      args([]);
      return { command: { kind: 'accounts list' }, json };
    case 'accounts show': {
      allow();
      const [accountId = ''] = args(['accountId']);
      return { command: { kind: 'accounts show', accountId }, json };
    }
    case 'plan set': {
      allow();
      const [accountId = '', planName = ''] = args(['accountId', 'plan']);
      return { command: { kind: 'plan set', accountId, plan: plan(planName) }, json };
    }
    case 'keys create': {
      allow('name', 'scopes', 'type');
      const [accountId = ''] = args(['accountId']);
      const scopes = values.scopes?.split(',').map((s) => s.trim());
      const unknown = scopes?.filter((s) => !(API_KEY_SCOPE_IDS as readonly string[]).includes(s)) ?? [];
      if (unknown.length > 0 || scopes?.length === 0) throw new UsageError(`--scopes takes a comma-separated list of ${API_KEY_SCOPE_IDS.join(', ')}`);
      if (values.type !== undefined && !(API_KEY_TYPE_IDS as readonly string[]).includes(values.type)) {
        throw new UsageError(`--type must be one of ${API_KEY_TYPE_IDS.join(', ')}`);
      }
      return {
        command: {
          kind: 'keys create',
          accountId,
          ...(values.name !== undefined ? { name: values.name } : {}),
          ...(scopes ? { scopes } : {}),
          ...(values.type !== undefined ? { type: values.type } : {}),
        },
        json,
      };
    }
    case 'accounts suspend': {
      allow('reason');
      const [accountId = ''] = args(['accountId']);
      if (values.reason === undefined || values.reason.trim() === '') throw new UsageError('accounts suspend needs --reason <text>');
      return { command: { kind: 'accounts suspend', accountId, reason: values.reason }, json };
    }
    case 'accounts resume': {
      allow('reason');
      const [accountId = ''] = args(['accountId']);
      return { command: { kind: 'accounts resume', accountId, ...(values.reason !== undefined ? { reason: values.reason } : {}) }, json };
    }
    case 'origins set': {
      allow();
      const [accountId = '', ...origins] = rest;
      if (accountId.trim() === '') throw new UsageError('"origins set" takes <accountId> [<origin> ...]');
      return { command: { kind: 'origins set', accountId, origins }, json };
    }
    case 'publishable-ids set': {
      allow();
      const [accountId = '', mode = ''] = args(['accountId', 'mode']);
      if (!(PUBLISHABLE_EVENT_ID_MODES as readonly string[]).includes(mode)) {
        throw new UsageError(`"publishable-ids set" takes <accountId> ${PUBLISHABLE_EVENT_ID_MODES.join('|')}`);
      }
      return { command: { kind: 'publishable-ids set', accountId, mode: mode as PublishableEventIdMode }, json };
    }
    case 'keys list': {
      allow();
      const [accountId = ''] = args(['accountId']);
      return { command: { kind: 'keys list', accountId }, json };
    }
    case 'keys revoke': {
      allow();
      const [accountId = '', keyId = ''] = args(['accountId', 'keyId']);
      return { command: { kind: 'keys revoke', accountId, keyId }, json };
    }
    case 'owners create': {
      allow('password-stdin');
      const [accountId = '', email = ''] = args(['accountId', 'email']);
      return { command: { kind: 'owners create', accountId, email, passwordStdin: values['password-stdin'] === true }, json };
    }
    case 'owners list': {
      allow();
      const [accountId = ''] = args(['accountId']);
      return { command: { kind: 'owners list', accountId }, json };
    }
    case 'ledger ': {
      allow('account', 'period', 'csv');
      args([]);
      if (values.period !== undefined && !/^\d{6}$/.test(values.period)) throw new UsageError('--period must be a month as YYYYMM');
      return {
        command: {
          kind: 'ledger',
          ...(values.account !== undefined ? { accountId: values.account } : {}),
          ...(values.period !== undefined ? { period: values.period } : {}),
          csv: values.csv === true,
        },
        json,
      };
    }
    case 'audit ':
      args([]);
      return { command: parseAuditCommand({ flags: values, allow, args, usageError: (m) => new UsageError(m) }), json };
    default: {
      if (group === 'erase') {
        allow();
        return { command: parseEraseCommand(action, rest, (m) => new UsageError(m)), json };
      }
      if (group === 'erasures' && action === 'reapply') {
        allow();
        args([]);
        return { command: { kind: 'erasures reapply' }, json };
      }
      const access = parseAdminsCommand(group, action ?? '', { flags: values, allow, args, usageError: (m) => new UsageError(m) });
      if (access) return { command: access, json };
      const reader = parseReadersCommand(group, action ?? '', { allow, args });
      if (reader) return { command: reader, json };
      const crm =
        group === 'mapping' || group === 'credentials'
          ? parseCrmCommand(group, { action: action ?? '', flags: values, allow, args, usageError: (m) => new UsageError(m) })
          : undefined;
      if (crm) return { command: crm, json };
      throw new UsageError(`unknown command "${[group, action].filter(Boolean).join(' ')}"`);
    }
  }
}

const OPTIONS = {
  name: { type: 'string' },
  plan: { type: 'string' },
  version: { type: 'string' },
  mapping: { type: 'string' },
  type: { type: 'string' },
  'if-match': { type: 'string' },
  'skip-check': { type: 'boolean' },
  stdin: { type: 'boolean' },
  json: { type: 'boolean' },
  'password-stdin': { type: 'boolean' },
  account: { type: 'string' },
  period: { type: 'string' },
  csv: { type: 'boolean' },
  scopes: { type: 'string' },
  reason: { type: 'string' },
  role: { type: 'string' },
  actor: { type: 'string' },
  action: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  limit: { type: 'string' },
  cursor: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

const FLAGS: readonly Flag[] = [
  'name',
  'plan',
  'version',
  'mapping',
  'type',
  'if-match',
  'skip-check',
  'stdin',
  'account',
  'period',
  'csv',
  'scopes',
  'reason',
  'role',
  'actor',
  'action',
  'from',
  'to',
  'limit',
  'cursor',
  'password-stdin',
];

function plan(value: string): PlanId {
  if (!(PLAN_IDS as readonly string[]).includes(value)) throw new UsageError(`unknown plan "${value}" (one of ${PLAN_IDS.join(', ')})`);
  return value as PlanId;
}

export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  body?: unknown;
}

export function requestFor(command: CoreCommand): ApiRequest {
  const account = (id: string) => `/admin/v1/accounts/${encodeURIComponent(id)}`;
  switch (command.kind) {
    case 'accounts create':
      return { method: 'POST', path: '/admin/v1/accounts', body: { name: command.name, plan: command.plan } };
    case 'accounts list':
      return { method: 'GET', path: '/admin/v1/accounts' };
    case 'accounts show':
      return { method: 'GET', path: account(command.accountId) };
    case 'plan set':
      return { method: 'PUT', path: `${account(command.accountId)}/plan`, body: { plan: command.plan } };
    case 'keys create':
      return {
        method: 'POST',
        path: `${account(command.accountId)}/keys`,
        body: {
          ...(command.name !== undefined ? { name: command.name } : {}),
          ...(command.scopes ? { scopes: command.scopes } : {}),
          ...(command.type ? { type: command.type } : {}),
        },
      };
    case 'accounts suspend':
      return { method: 'POST', path: `${account(command.accountId)}/suspend`, body: { reason: command.reason } };
    case 'accounts resume':
      return { method: 'POST', path: `${account(command.accountId)}/resume`, body: command.reason !== undefined ? { reason: command.reason } : {} };
    case 'origins set':
      return { method: 'PUT', path: `${account(command.accountId)}/allowed-origins`, body: { origins: command.origins } };
    case 'publishable-ids set':
      return { method: 'PUT', path: `${account(command.accountId)}/publishable-event-ids`, body: { mode: command.mode } };
    case 'keys list':
      return { method: 'GET', path: `${account(command.accountId)}/keys` };
    case 'keys revoke':
      return { method: 'POST', path: `${account(command.accountId)}/keys/${encodeURIComponent(command.keyId)}/revoke` };
    case 'owners create':
      return {
        method: 'POST',
        path: `${account(command.accountId)}/owners`,
        body: { email: command.email, ...(command.password ? { password: command.password } : {}) },
      };
    case 'owners list':
      return { method: 'GET', path: `${account(command.accountId)}/owners` };
    case 'ledger': {
      const query = new URLSearchParams({
        ...(command.accountId ? { accountId: command.accountId } : {}),
        ...(command.period ? { period: command.period } : {}),
      });
      return { method: 'GET', path: `/admin/v1/billing/ledger${query.size > 0 ? `?${query}` : ''}` };
    }
  }
}

export interface CliIo extends Io {
  fetch: typeof fetch;
  /** Default: the file system and the process's stdin (also --password-stdin of owners create). */
  readFile?(path: string): Promise<string>;
  readStdin?(): Promise<string>;
}

async function buildRequest(command: CoreCommand | CrmCommand | AdminsCommand | ReadersCommand | EraseCommand, io: CliIo): Promise<ApiRequest> {
  if (isEraseCommand(command)) {
    if (command.kind === 'erase' && command.value === '-') command.value = (await (io.readStdin ?? (() => readAll(process.stdin)))()).trim();
    return eraseRequestFor(command);
  }
  if (isAdminsCommand(command)) return adminsRequestFor(command);
  if (isReadersCommand(command)) return readersRequestFor(command);
  if (!isCrmCommand(command)) return requestFor(command);
  const { hasBody, ...request } = crmRequestFor(command);
  if (!hasBody) return request;
  const body = await loadBody(command, {
    env: io.env,
    readFile: io.readFile ?? ((path) => readFile(path, 'utf8')),
    readStdin: io.readStdin ?? (() => readAll(process.stdin)),
  });
  return { ...request, body };
}

export const DEFAULT_ADMIN_URL = 'http://127.0.0.1:3200';
const REQUEST_TIMEOUT_MS = 30_000;

export const ADMIN_COMMAND: FrameCommand<Invocation & { command: Exclude<Command, { kind: 'help' }> }, CliIo> = {
  usage: USAGE,
  parse: (argv) => {
    const invocation = parseInvocation(argv);
    return invocation.command.kind === 'help' ? HELP : { ...invocation, command: invocation.command };
  },
  run: (invocation, io) => request(invocation.command, invocation.json, io),
};

/** Runs one invocation; resolves to the exit code (0 ok, 1 failed request, 2 usage). */
export const runCli = (argv: readonly string[], io: CliIo): Promise<number> => runCommand(ADMIN_COMMAND, argv, io);

async function request(command: Exclude<Command, { kind: 'help' }>, json: boolean, io: CliIo): Promise<number> {
  const token = io.env.ADMIN_TOKEN ?? '';
  if (token === '') throw new InputError('ADMIN_TOKEN is not set; export the admin token of the gateway (its ADMIN_TOKEN setting)');
  const base = (io.env.ADMIN_URL || DEFAULT_ADMIN_URL).replace(/\/+$/, '');
  if (command.kind === 'owners create' || command.kind === 'owners reset-password') {
    const fromStdin = command.passwordStdin ? (await (io.readStdin ?? (() => readAll(process.stdin)))()).replace(/\r?\n$/, '') : '';
    const password = io.env.OWNER_PASSWORD || fromStdin;
    if (password) command.password = password;
  }
  const request = await buildRequest(command, io);
  const hasBody = request.body !== undefined;
  let response: Response;
  try {
    response = await io.fetch(`${base}${request.path}`, {
      method: request.method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: 'application/json',
        ...(hasBody ? { 'content-type': 'application/json' } : {}),
        ...request.headers,
      },
      ...(hasBody ? { body: JSON.stringify(request.body) } : {}),
      signal: AbortSignal.timeout(isEraseCommand(command) ? ERASE_TIMEOUT_MS : REQUEST_TIMEOUT_MS),
    });
  } catch (err) {
    io.stderr(`error: cannot reach the admin API at ${base}: ${describeError(err)}\n`);
    return EXIT_FAILED;
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = text === '' ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  if (!response.ok) {
    if (json && body !== undefined) io.stdout(`${JSON.stringify(body, null, 2)}\n`);
    io.stderr(formatProblem(response.status, response.statusText, body));
    return EXIT_FAILED;
  }
  if (body === undefined) {
    io.stderr(`error: ${response.status} the admin API answered without a JSON body\n`);
    return EXIT_FAILED;
  }
  io.stdout(json ? `${JSON.stringify(body, null, 2)}\n` : formatSuccess(command, body));
  return EXIT_OK;
}
