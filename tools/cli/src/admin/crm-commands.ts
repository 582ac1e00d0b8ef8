import { CRM_TYPES } from '@ingest/schemas';
import { InputError } from '../frame.js';

/**
 * The CRM commands of the admin CLI: mapping versions, dry-runs and credentials. Parsing,
 * requests and output are pure; reading the files, the environment and stdin happens in
 * `loadBody`, which runCli calls with its io. Secrets are read from the environment or stdin,
 * never from argv, which any user of the machine can see in `ps`.
 */
export type CrmType = (typeof CRM_TYPES)[number];

export type CrmCommand =
  | { kind: 'mapping put'; accountId: string; file: string; ifMatch?: number; skipCheck?: true }
  | { kind: 'mapping get'; accountId: string; version?: number }
  | { kind: 'mapping versions'; accountId: string }
  | { kind: 'mapping dry-run'; accountId: string; eventFile: string; mappingFile?: string }
  | { kind: 'mapping delete'; accountId: string; ifMatch?: number }
  | { kind: 'credentials put'; accountId: string; name: string; type: CrmType; fromStdin: boolean }
  | { kind: 'credentials list'; accountId: string }
  | { kind: 'credentials delete'; accountId: string; name: string };

const CRM_KINDS: ReadonlySet<string> = new Set<CrmCommand['kind']>([
  'mapping put',
  'mapping get',
  'mapping versions',
  'mapping dry-run',
  'mapping delete',
  'credentials put',
  'credentials list',
  'credentials delete',
]);

export function isCrmCommand(command: { kind: string }): command is CrmCommand {
  return CRM_KINDS.has(command.kind);
}

export const CRM_USAGE = `  mapping put <accountId> <file.json> [--if-match N] [--skip-check]
                                                           store a new mapping version (refused if N is not current, or if
                                                           its fields do not fit the CRM; --skip-check: without asking the CRM)
  mapping get <accountId> [--version N]                    show the current (or one) mapping version
  mapping versions <accountId>                             list mapping versions, newest first
  mapping dry-run <accountId> <event.json> [--mapping draft.json]
                                                           show the CRM operations an event would cause
  mapping delete <accountId> [--if-match N]                delete the mapping (a new version that stops sync)
  credentials put <accountId> <name> --type hubspot|salesforce|webhook [--stdin]
                                                           store a CRM credential; fields from the
                                                           environment (below) or a JSON object on stdin
  credentials list <accountId>                             list credentials (never their secrets)
  credentials delete <accountId> <name>                    delete a credential (refused while the mapping uses it)`;

export const CRM_ENV_USAGE = `  CRM_ACCESS_TOKEN     hubspot, salesforce: the access token (secret)
  CRM_BASE_URL         hubspot: API base URL (optional)
  CRM_INSTANCE_URL     salesforce: org instance URL
  CRM_API_VERSION, CRM_CONTACT_EXTERNAL_ID_FIELD, CRM_ACCOUNT_EXTERNAL_ID_FIELD   salesforce (optional)
  CRM_WEBHOOK_URL      webhook: where signed POSTs go
  CRM_WEBHOOK_SECRET   webhook: the signing secret (secret)
  CRM_WEBHOOK_PREVIOUS_SECRET   webhook: the secret being rotated out; signs too while set (secret)`;

export interface CrmFlags {
  version?: string;
  mapping?: string;
  type?: string;
  'if-match'?: string;
  'skip-check'?: boolean;
  stdin?: boolean;
}

export type Flag =
  | keyof CrmFlags
  | 'name'
  | 'plan'
  | 'account'
  | 'period'
  | 'csv'
  | 'scopes'
  | 'reason'
  | 'role'
  | 'actor'
  | 'action'
  | 'from'
  | 'to'
  | 'limit'
  | 'cursor'
  | 'password-stdin';

export interface CrmParseContext {
  action: string;
  flags: CrmFlags;
  /** Refuses flags other than these. */
  allow(...flags: Flag[]): void;
  /** The positional arguments, exactly these. */
  args(names: string[]): string[];
  usageError(message: string): Error;
}

export function parseCrmCommand(group: 'mapping' | 'credentials', ctx: CrmParseContext): CrmCommand | undefined {
  const { flags } = ctx;
  switch (`${group} ${ctx.action}`) {
    case 'mapping put': {
      ctx.allow('if-match', 'skip-check');
      const [accountId = '', file = ''] = ctx.args(['accountId', 'file.json']);
      return {
        kind: 'mapping put',
        accountId,
        file,
        ...(flags['if-match'] !== undefined ? { ifMatch: positive(ctx, '--if-match', flags['if-match']) } : {}),
        ...(flags['skip-check'] === true ? { skipCheck: true as const } : {}),
      };
    }
    case 'mapping get': {
      ctx.allow('version');
      const [accountId = ''] = ctx.args(['accountId']);
      return { kind: 'mapping get', accountId, ...(flags.version !== undefined ? { version: positive(ctx, '--version', flags.version) } : {}) };
    }
    case 'mapping versions': {
      ctx.allow();
      const [accountId = ''] = ctx.args(['accountId']);
      return { kind: 'mapping versions', accountId };
    }
    case 'mapping dry-run': {
      ctx.allow('mapping');
      const [accountId = '', eventFile = ''] = ctx.args(['accountId', 'event.json']);
      return { kind: 'mapping dry-run', accountId, eventFile, ...(flags.mapping !== undefined ? { mappingFile: flags.mapping } : {}) };
    }
    case 'credentials put': {
      ctx.allow('type', 'stdin');
      const [accountId = '', name = ''] = ctx.args(['accountId', 'name']);
      const type = flags.type;
      if (type === undefined || !(CRM_TYPES as readonly string[]).includes(type)) throw ctx.usageError(`credentials put needs --type ${CRM_TYPES.join('|')}`);
      return { kind: 'credentials put', accountId, name, type: type as CrmType, fromStdin: flags.stdin === true };
    }
    case 'credentials list': {
      ctx.allow();
      const [accountId = ''] = ctx.args(['accountId']);
      return { kind: 'credentials list', accountId };
    }
    case 'mapping delete': {
      ctx.allow('if-match');
      const [accountId = ''] = ctx.args(['accountId']);
      return { kind: 'mapping delete', accountId, ...(flags['if-match'] !== undefined ? { ifMatch: positive(ctx, '--if-match', flags['if-match']) } : {}) };
    }
    case 'credentials delete': {
      ctx.allow();
      const [accountId = '', name = ''] = ctx.args(['accountId', 'name']);
      return { kind: 'credentials delete', accountId, name };
    }
    default:
      return undefined;
  }
}

function positive(ctx: CrmParseContext, flag: string, value: string): number {
  if (!/^[1-9][0-9]{0,8}$/.test(value)) throw ctx.usageError(`${flag} must be a version number (1, 2, ...)`);
  return Number(value);
}

export interface CrmRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  headers?: Record<string, string>;
  /** Whether the command sends a body, which `loadBody` provides. */
  hasBody: boolean;
}

export function crmRequestFor(command: CrmCommand): CrmRequest {
  const crm = `/admin/v1/accounts/${encodeURIComponent(command.accountId)}/crm`;
  switch (command.kind) {
    case 'mapping put':
      return {
        method: 'PUT',
        path: command.skipCheck ? `${crm}/mapping?check=skip` : `${crm}/mapping`,
        hasBody: true,
        ...(command.ifMatch !== undefined ? { headers: { 'if-match': `"${command.ifMatch}"` } } : {}),
      };
    case 'mapping get':
      return { method: 'GET', path: command.version === undefined ? `${crm}/mapping` : `${crm}/mapping/versions/${command.version}`, hasBody: false };
    case 'mapping versions':
      return { method: 'GET', path: `${crm}/mapping/versions`, hasBody: false };
    case 'mapping dry-run':
      return { method: 'POST', path: `${crm}/mapping/dry-run`, hasBody: true };
    case 'credentials put':
      return { method: 'PUT', path: `${crm}/credentials/${encodeURIComponent(command.name)}`, hasBody: true };
    case 'credentials list':
      return { method: 'GET', path: `${crm}/credentials`, hasBody: false };
    case 'mapping delete':
      return {
        method: 'DELETE',
        path: `${crm}/mapping`,
        hasBody: false,
        ...(command.ifMatch !== undefined ? { headers: { 'if-match': `"${command.ifMatch}"` } } : {}),
      };
    case 'credentials delete':
      return { method: 'DELETE', path: `${crm}/credentials/${encodeURIComponent(command.name)}`, hasBody: false };
  }
}

export interface BodySources {
  env: Record<string, string | undefined>;
  readFile(path: string): Promise<string>;
  readStdin(): Promise<string>;
}

export { InputError };

/** The JSON body of a command that sends one; the server validates it. */
export async function loadBody(command: CrmCommand, io: BodySources): Promise<unknown> {
  switch (command.kind) {
    case 'mapping put':
      return readJson(io, command.file);
    case 'mapping dry-run': {
      const event = await readJson(io, command.eventFile);
      return command.mappingFile === undefined ? { event } : { event, mapping: await readJson(io, command.mappingFile) };
    }
    case 'credentials put':
      return { ...(command.fromStdin ? await stdinFields(io) : credentialFromEnv(command.type, io.env)), type: command.type };
    default:
      return undefined;
  }
}

async function readJson(io: BodySources, path: string): Promise<unknown> {
  let text: string;
  try {
    text = await io.readFile(path);
  } catch (err) {
    throw new InputError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new InputError(`${path} is not JSON`);
  }
}

async function stdinFields(io: BodySources): Promise<Record<string, unknown>> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(await io.readStdin());
  } catch {
    // The parser's message quotes the input, which holds a secret.
    throw new InputError('stdin is not a JSON object');
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InputError('stdin is not a JSON object');
  return parsed as Record<string, unknown>;
}

const ENV_FIELDS: Record<CrmType, [field: string, variable: string][]> = {
  hubspot: [
    ['accessToken', 'CRM_ACCESS_TOKEN'],
    ['baseUrl', 'CRM_BASE_URL'],
  ],
  salesforce: [
    ['accessToken', 'CRM_ACCESS_TOKEN'],
    ['instanceUrl', 'CRM_INSTANCE_URL'],
    ['apiVersion', 'CRM_API_VERSION'],
    ['contactExternalIdField', 'CRM_CONTACT_EXTERNAL_ID_FIELD'],
    ['accountExternalIdField', 'CRM_ACCOUNT_EXTERNAL_ID_FIELD'],
  ],
  webhook: [
    ['url', 'CRM_WEBHOOK_URL'],
    ['secret', 'CRM_WEBHOOK_SECRET'],
    ['previousSecret', 'CRM_WEBHOOK_PREVIOUS_SECRET'],
  ],
};

/** Set variables only: a missing required one is reported by the server with its field. */
export function credentialFromEnv(type: CrmType, env: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(ENV_FIELDS[type].flatMap(([field, variable]) => (env[variable] ? [[field, env[variable]]] : [])));
}

interface StoredMappingOut {
  accountId: string;
  version: number;
  author: string;
  createdAt: string;
  mapping: unknown;
}

interface CredentialOut {
  name: string;
  type: string;
  updatedAt: string;
  baseUrl?: string;
  instanceUrl?: string;
  url?: string;
}

interface DryRunOut {
  mappingVersion: number | null;
  operations: unknown[];
  rules: { ruleId: string; matched: boolean; reason?: string }[];
  crm?: { type: string; credentialsRef: string; credential: string };
  calls?: { method: string; path: string; body?: unknown }[];
  notes?: { code: string; message: string }[];
}

export function formatCrmSuccess(command: CrmCommand, body: unknown, table: (rows: string[][]) => string): string {
  switch (command.kind) {
    case 'mapping put': {
      const stored = body as StoredMappingOut;
      return `stored mapping version ${stored.version} for account ${stored.accountId}\n`;
    }
    case 'mapping get': {
      const stored = body as StoredMappingOut;
      return `mapping version ${stored.version} of account ${stored.accountId} (${stored.author}, ${stored.createdAt})\n${JSON.stringify(stored.mapping, null, 2)}\n`;
    }
    case 'mapping versions': {
      const { versions } = body as { versions: { version: number; author: string; createdAt: string }[] };
      if (versions.length === 0) return 'no mapping versions\n';
      return table([['VERSION', 'AUTHOR', 'CREATED'], ...versions.map((v) => [String(v.version), v.author, v.createdAt])]);
    }
    case 'mapping dry-run': {
      const result = body as DryRunOut;
      const lines = [`mapping: ${result.mappingVersion === null ? 'draft' : `version ${result.mappingVersion}`}`, 'rules:'];
      for (const r of result.rules) lines.push(`  ${r.matched ? 'matched' : 'skipped'}  ${r.ruleId}${r.reason ? ` (${r.reason})` : ''}`);
      lines.push(`operations (${result.operations.length}):`, JSON.stringify(result.operations, null, 2));
      // Older gateways answer without calls; the output then ends with the operations, as before.
      if (result.calls === undefined) return `${lines.join('\n')}\n`;
      const crm = result.crm ? ` to ${result.crm.type} (credential ${result.crm.credentialsRef}: ${result.crm.credential})` : '';
      lines.push(`calls${crm} (${result.calls.length}):`);
      for (const c of result.calls) lines.push(`  ${c.method} ${c.path}`, ...(c.body === undefined ? [] : [`    ${JSON.stringify(c.body)}`]));
      if ((result.notes ?? []).length > 0) lines.push('notes:', ...(result.notes ?? []).map((n) => `  ${n.code}: ${n.message}`));
      return `${lines.join('\n')}\n`;
    }
    case 'credentials put': {
      const c = body as CredentialOut;
      return `stored ${c.type} credential ${c.name} for account ${command.accountId} (the secret is not shown)\n`;
    }
    case 'mapping delete':
      return `deleted the mapping of account ${command.accountId}: version ${(body as { version: number }).version} stops sync\n`;
    case 'credentials delete':
      return `deleted credential ${command.name} of account ${command.accountId}\n`;
    case 'credentials list': {
      const { credentials } = body as { credentials: CredentialOut[] };
      if (credentials.length === 0) return 'no credentials\n';
      return table([
        ['NAME', 'TYPE', 'ENDPOINT', 'UPDATED'],
        ...credentials.map((c) => [c.name, c.type, c.url ?? c.instanceUrl ?? c.baseUrl ?? '-', c.updatedAt]),
      ]);
    }
  }
}
