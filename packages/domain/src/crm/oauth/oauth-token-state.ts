import type { SealedSecrets } from '../../control-plane/credential-seal.js';
import type { CrmCredentialSettings } from '../../control-plane/types.js';

/**
 * The token set crm-sink keeps for an OAuth or JWT bearer credential after it refreshed it: the
 * one wire format of the Redis key `crm:oauth:token:<accountId>/<name>` (owner: crm-sink's
 * token manager writes, the console's connection status reads the clear fields). The tokens are
 * sealed for crm-sink's own public key, bound (AAD) to the account, name and connection, so a
 * Redis dump opens nothing and a token set cannot be moved to another credential or connection.
 *
 * Why Redis and not a control topic: crm-sink's Kafka principal may not write control.* (only
 * the console may), and a refresh must be visible to every replica at once and compare-and-set
 * (the single flight), which Redis gives. Redis is run with persistence like for the sink's
 * ledger; when the key is lost, the sink starts again from the record's tokens (docs/crm-sync.md).
 */
export interface OAuthTokenState {
  v: 1;
  connectionId: string;
  /** 0 is the record's own tokens; each refresh adds one (the compare-and-set's version). */
  generation: number;
  sealed?: SealedSecrets;
  expiresAtMs: number;
  refreshedAtMs: number;
  /** The refresh failed for good: the owner must connect again. */
  broken?: { reason: string; atMs: number };
}

export function oauthTokenKey(keyPrefix: string | undefined, accountId: string, name: string): string {
  return `${keyPrefix ?? ''}crm:oauth:token:${encodeURIComponent(accountId)}/${encodeURIComponent(name)}`;
}

export function oauthTokenAad(accountId: string, name: string, connectionId: string): string {
  return `crm-oauth-tokens:v1:${accountId}/${name}:${connectionId}`;
}

/** Reads a stored state; undefined for a version this release does not know (treated as absent) or garbage. */
export function decodeOAuthTokenState(raw: string | null): OAuthTokenState | undefined {
  if (raw === null) return undefined;
  try {
    const parsed = JSON.parse(raw) as Partial<OAuthTokenState>;
    if (parsed.v !== 1 || typeof parsed.connectionId !== 'string' || typeof parsed.generation !== 'number') return undefined;
    return parsed as OAuthTokenState;
  } catch {
    return undefined;
  }
}

/** What the owner sees of a connection: never a token. */
export type ConnectionHealth = { state: 'connected'; refreshedAt?: string; expiresAt?: string } | { state: 'broken'; reason: string; since: string };

export function connectionHealth(state: OAuthTokenState | undefined, connectionId: string): ConnectionHealth {
  if (!state || state.connectionId !== connectionId) return { state: 'connected' };
  if (state.broken) return { state: 'broken', reason: state.broken.reason, since: new Date(state.broken.atMs).toISOString() };
  return { state: 'connected', refreshedAt: new Date(state.refreshedAtMs).toISOString(), expiresAt: new Date(state.expiresAtMs).toISOString() };
}

/** The queue of grants to revoke (console pushes on disconnect, crm-sink pops and revokes). */
export function oauthRevokeQueueKey(keyPrefix: string | undefined): string {
  return `${keyPrefix ?? ''}crm:oauth:revoke`;
}

/** One revocation request: the disconnected credential's sealed secrets, which only crm-sink can open. */
export interface OAuthRevokeRequest {
  v: 1;
  accountId: string;
  name: string;
  provider: 'hubspot' | 'salesforce';
  connectionId: string;
  /** The record's sealed secrets (AAD of the record: storedCredentialAad). */
  sealed: SealedSecrets;
  /** The record's clear settings: the AAD of a record sealed under version 2 binds them. Absent in requests from before it. */
  credential?: CrmCredentialSettings;
  requestedAtMs: number;
  attempts?: number;
}

export function decodeOAuthRevokeRequest(raw: string): OAuthRevokeRequest | undefined {
  try {
    const parsed = JSON.parse(raw) as Partial<OAuthRevokeRequest>;
    if (parsed.v !== 1 || typeof parsed.accountId !== 'string' || typeof parsed.name !== 'string' || typeof parsed.sealed !== 'object') return undefined;
    return parsed as OAuthRevokeRequest;
  } catch {
    return undefined;
  }
}

/** Requests waiting at most; beyond it the console's disconnect still works and logs that revocation was skipped. */
export const OAUTH_REVOKE_QUEUE_MAX = 10_000;
