import { AppError } from '@ingest/platform';
import { type Account, API_KEY_SCOPES, type ApiKeyRecord, type ApiKeyScope, API_KEY_TYPES, type ApiKeyType } from './types.js';

/**
 * What an API key may do, and whether its account may do anything at all. Pure: the gateway's
 * auth hook, the admin API and the dashboard ask here, so one place says what a scope means.
 *
 * - `events:write`: POST /v1/events, /v1/events/bulk, /v1/backfill/csv and GET /v1/jobs/{id}.
 * - `events:read`: GET /v1/events/{eventId}.
 * - `usage:read`: GET /v1/usage.
 *
 * Keys stored before scopes existed have no `scopes` and keep every scope, so no existing
 * integration breaks. A publishable key (type `publishable`, `svc_pub_...`) is meant to sit in a
 * web page where anyone can copy it: it can only send events, whatever its record says.
 */
export const DEFAULT_API_KEY_SCOPES: readonly ApiKeyScope[] = ['events:write', 'usage:read'];
export const PUBLISHABLE_KEY_SCOPES: readonly ApiKeyScope[] = ['events:write'];

/** Browser origins per account: every gateway holds them in memory and matches them per request. */
export const MAX_ALLOWED_ORIGINS = 20;
export const ORIGIN_MAX_LENGTH = 200;
export const SUSPENSION_REASON_MAX_LENGTH = 500;

export function keyType(record: Pick<ApiKeyRecord, 'type'>): ApiKeyType {
  return record.type ?? 'secret';
}

export function effectiveScopes(record: Pick<ApiKeyRecord, 'scopes' | 'type'>): readonly ApiKeyScope[] {
  if (keyType(record) === 'publishable') return PUBLISHABLE_KEY_SCOPES;
  return record.scopes ?? API_KEY_SCOPES;
}

export function keyAllows(record: Pick<ApiKeyRecord, 'scopes' | 'type'>, scope: ApiKeyScope): boolean {
  return effectiveScopes(record).includes(scope);
}

export function isSuspended(account: Pick<Account, 'suspension'>): boolean {
  return account.suspension !== undefined;
}

/** The scopes and type a new key gets; `invalid_scopes` / `invalid_key_type` name what is wrong. */
export function newKeyAccess(options: { scopes?: readonly unknown[]; type?: unknown }): { scopes: ApiKeyScope[]; type: ApiKeyType } {
  const type = options.type ?? 'secret';
  if (!(API_KEY_TYPES as readonly unknown[]).includes(type)) throw new AppError('invalid_key_type', `type must be one of ${API_KEY_TYPES.join(', ')}`);
  if (type === 'publishable') {
    // Asking a publishable key for more than it can have is a mistake worth saying, not ignoring.
    if (options.scopes?.some((s) => s !== 'events:write')) {
      throw new AppError('invalid_scopes', 'a publishable key can only have the scope events:write (it is never valid for reads)');
    }
    return { scopes: [...PUBLISHABLE_KEY_SCOPES], type };
  }
  const scopes = options.scopes ?? DEFAULT_API_KEY_SCOPES;
  const unknown = scopes.filter((s) => !(API_KEY_SCOPES as readonly unknown[]).includes(s));
  if (unknown.length > 0 || scopes.length === 0) {
    throw new AppError('invalid_scopes', `scopes must be a non-empty list of ${API_KEY_SCOPES.join(', ')}`);
  }
  // Stored in the canonical order, once each.
  return { scopes: API_KEY_SCOPES.filter((s) => scopes.includes(s)), type: 'secret' };
}

/**
 * Origins as browsers send them (`https://app.example.com`, `http://localhost:5173`): scheme,
 * host and port only, lower-case. Anything else (a path, a wildcard, `null`) is refused, since a
 * near miss would silently never match.
 */
export function validOrigins(origins: readonly unknown[]): string[] {
  if (origins.length > MAX_ALLOWED_ORIGINS) throw new AppError('invalid_origins', `at most ${MAX_ALLOWED_ORIGINS} origins per account`);
  const out: string[] = [];
  for (const origin of origins) {
    if (typeof origin !== 'string' || origin.length > ORIGIN_MAX_LENGTH || !isOrigin(origin)) {
      throw new AppError('invalid_origins', `each origin must be scheme://host[:port] (http or https, no path), at most ${ORIGIN_MAX_LENGTH} characters`);
    }
    const normalised = new URL(origin).origin;
    if (!out.includes(normalised)) out.push(normalised);
  }
  return out;
}

function isOrigin(candidate: string): boolean {
  try {
    const url = new URL(candidate);
    return (url.protocol === 'https:' || url.protocol === 'http:') && url.origin === candidate.toLowerCase().replace(/\/$/, '');
  } catch {
    return false;
  }
}

export function validSuspensionReason(reason: unknown): string {
  const trimmed = typeof reason === 'string' ? reason.trim() : '';
  if (trimmed.length < 1 || trimmed.length > SUSPENSION_REASON_MAX_LENGTH) {
    throw new AppError('invalid_reason', `reason must be 1 to ${SUSPENSION_REASON_MAX_LENGTH} characters`);
  }
  return trimmed;
}
