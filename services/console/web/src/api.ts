import type {
  AuditPage,
  ConnectionTestResult,
  ConnectionView,
  CrmCredentialView,
  CrmPropertyList,
  CreatedApiKeyView,
  DashboardSyncHealth,
  DashboardUsage,
  DeadLetterDetail,
  DeadLetterView,
  DebuggerEvent,
  DryRunView,
  StoredEventView,
  JobReceipt,
  JobView,
  KeyView,
  MappingVersionView,
  OAuthConnectionHealth,
  SessionView,
  StoredMappingView,
  TotpStatus,
} from './types.js';

/** A problem+json answer of the dashboard API, with its fields for messages next to inputs. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly errors: { field?: string; code?: string; message: string }[] = [],
    readonly extensions: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

let csrfToken = '';

async function call<T>(method: string, path: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<T> {
  const headers: Record<string, string> = { ...extraHeaders };
  if (body !== undefined && !(body instanceof FormData)) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  const response = await fetch(`/dashboard/api${path}`, {
    method,
    headers,
    credentials: 'same-origin',
    body: body === undefined ? undefined : body instanceof FormData ? body : JSON.stringify(body),
  });
  if (response.status === 204) return undefined as T;
  const data: unknown = await response.json().catch(() => ({}));
  if (!response.ok) {
    const problem = data as { detail?: string; title?: string; errors?: { field?: string; message: string }[] } & Record<string, unknown>;
    throw new ApiError(response.status, problem.detail ?? problem.title ?? `Request failed (${response.status})`, problem.errors, problem);
  }
  return data as T;
}

export const api = {
  /** Starts connecting a CRM with OAuth: the CRM's authorize URL to navigate to (the callback comes back to the dashboard). */
  crmOAuthStart: (provider: 'hubspot' | 'salesforce', name?: string) =>
    call<{ authorizeUrl: string }>('POST', `/crm/oauth/${provider}/start`, name ? { name } : {}),
  /** OAuth and JWT bearer connections with their health: crm-sink marks one broken when the CRM refuses its refresh for good. */
  crmOAuthConnections: () => call<{ connections: { name: string; health: OAuthConnectionHealth }[] }>('GET', '/crm/oauth/connections'),
  async session(): Promise<SessionView | null> {
    try {
      const s = await call<SessionView>('GET', '/session');
      csrfToken = s.csrfToken;
      return s;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return null;
      throw err;
    }
  },
  /** `codes`: the second step of an owner with a second factor (the server said second-factor-required). */
  async signIn(email: string, password: string, codes: { totpCode?: string; recoveryCode?: string } = {}): Promise<SessionView> {
    const s = await call<SessionView>('POST', '/session', { email, password, ...codes });
    csrfToken = s.csrfToken;
    return s;
  },
  signOut: () => call<void>('DELETE', '/session'),
  totp: () => call<TotpStatus>('GET', '/totp'),
  startTotp: () => call<{ secret: string; uri: string }>('POST', '/totp/enrolment'),
  confirmTotp: (code: string) => call<{ recoveryCodes: string[] }>('POST', '/totp/enrolment/confirm', { code }),
  removeTotp: (code: string) => call<void>('POST', '/totp/remove', { code }),
  setRequireTotp: (requireOwnerTotp: boolean) => call<TotpStatus>('PUT', '/account/security', { requireOwnerTotp }),
  keys: () => call<{ keys: KeyView[] }>('GET', '/keys'),
  createKey: (name: string, access: { scopes?: string[]; type?: 'secret' | 'publishable' } = {}) =>
    call<CreatedApiKeyView>('POST', '/keys', { name, ...access }),
  revokeKey: (keyId: string) => call<KeyView>('POST', `/keys/${encodeURIComponent(keyId)}/revoke`),
  usage: () => call<DashboardUsage>('GET', '/usage'),
  syncHealth: () => call<DashboardSyncHealth>('GET', '/sync-health'),
  audit: (cursor?: string) => call<AuditPage>('GET', `/audit${cursor ? `?cursor=${encodeURIComponent(cursor)}` : ''}`),
  jobs: () => call<{ jobs: JobView[] }>('GET', '/jobs'),
  /** `timezone`: the IANA zone of zone-less times; sent before the file, as the server reads fields that precede it. */
  uploadCsv: (file: File, timezone = '') => {
    const form = new FormData();
    if (timezone.trim() !== '') form.append('timezone', timezone.trim());
    form.append('file', file, file.name);
    return call<JobReceipt>('POST', '/jobs/csv', form);
  },
  mapping: () => call<{ current: StoredMappingView | null }>('GET', '/mapping'),
  mappingVersions: () => call<{ versions: MappingVersionView[] }>('GET', '/mapping/versions'),
  mappingVersion: (version: number) => call<StoredMappingView>('GET', `/mapping/versions/${version}`),
  /** `editedVersion`: the version the edit started from (If-Match), null for the first one. */
  /** `unchecked`: save without checking the fields against the CRM (the owner's explicit choice; audited). */
  saveMapping: (mapping: unknown, editedVersion: number | null, unchecked = false) =>
    call<StoredMappingView>('PUT', unchecked ? '/mapping?check=skip' : '/mapping', mapping, editedVersion === null ? {} : { 'if-match': `"${editedVersion}"` }),
  /** Stores a version that turns sync off; `version` is the one shown (If-Match). */
  deleteMapping: (version: number) => call<{ version: number }>('DELETE', '/mapping', undefined, { 'if-match': `"${version}"` }),
  events: (filter: { name: string; identity: string }) => {
    const query = new URLSearchParams();
    if (filter.name.trim()) query.set('name', filter.name.trim());
    if (filter.identity.trim()) query.set('identity', filter.identity.trim());
    const qs = query.toString();
    return call<{ limit: number; events: DebuggerEvent[] }>('GET', `/events${qs ? `?${qs}` : ''}`);
  },
  event: (eventId: string) => call<StoredEventView>('GET', `/events/${encodeURIComponent(eventId)}`),
  /** `refresh`: read after now (the server caches an account's list for a few seconds otherwise). */
  deadLetters: (refresh = false) => call<{ entries: DeadLetterView[]; truncated: boolean }>('GET', refresh ? '/deadletters?refresh=true' : '/deadletters'),
  /** One letter with its stored value (the account's own only). */
  deadLetter: (letter: Pick<DeadLetterView, 'topic' | 'position'>) => call<DeadLetterDetail>('GET', `/deadletters/${letter.topic}/${letter.position}`),
  replayDeadLetter: (letter: Pick<DeadLetterView, 'topic' | 'position'>) =>
    call<{ replayed: DeadLetterView; to: string }>('POST', '/deadletters/replay', { topic: letter.topic, position: letter.position }),
  connections: () => call<{ connections: ConnectionView[]; checksAvailable: boolean }>('GET', '/connections'),
  addConnection: (name: string, credential: unknown) => call<CrmCredentialView>('POST', '/connections', { name, credential }),
  /** Replaces the whole credential: the same non-secret fields with a new secret. */
  rotateConnection: (name: string, credential: unknown) => call<CrmCredentialView>('PUT', `/connections/${encodeURIComponent(name)}`, credential),
  removeConnection: (name: string) => call<{ name: string; deleted: true }>('DELETE', `/connections/${encodeURIComponent(name)}`),
  testConnection: (name: string) => call<ConnectionTestResult>('POST', `/connections/${encodeURIComponent(name)}/test`),
  connectionProperties: (name: string, object: 'contact' | 'company') =>
    call<CrmPropertyList>('GET', `/connections/${encodeURIComponent(name)}/properties?object=${object}`),
  dryRun: (event: unknown, mapping?: unknown) => call<DryRunView>('POST', '/mapping/dry-run', mapping === undefined ? { event } : { event, mapping }),
};
