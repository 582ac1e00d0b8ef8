import type { CRM_TYPES, CrmMapping, PublishableEventIdMode } from '@ingest/schemas';
import type { Component } from '@ingest/platform';
import type { AdminDirectory } from './admins.js';
import type { CredentialKeyring, CredentialSealer, CrmSecrets, SealedSecrets } from './credential-seal.js';
import type { OwnerTotp } from './owner-totp.js';
import type { JwtBearerAuth, OAuthAuth } from '../crm/oauth/credential-auth.js';

/**
 * The control plane: accounts, plans, API keys, CRM mapping versions and CRM credentials. Durable
 * in compacted Kafka topics (control.accounts, control.apikeys, control.mappings,
 * control.crm-credentials) and materialised in memory by
 * every service instance that needs it, as Kafka Connect and Schema Registry keep their state.
 */
export const PLANS = ['free', 'pro', 'growth'] as const;
export type Plan = (typeof PLANS)[number];

/** Events per calendar month (UTC) by plan. */
export const PLAN_LIMITS: Readonly<Record<Plan, number>> = { free: 1_000, pro: 50_000, growth: 500_000 };

export interface Account {
  id: string;
  name: string;
  plan: Plan;
  createdAt: string;
  updatedAt: string;
  /** Set while the account is suspended (access-control.ts); absent when it is not. */
  suspension?: AccountSuspension;
  /** Browser origins its publishable keys may send events from (CORS); absent: none. */
  allowedOrigins?: string[];
  /**
   * Whether eventIds sent through its publishable keys share the secret keys' dedupe space
   * (publishable-ids.ts); absent: `separate`.
   */
  publishableEventIds?: PublishableEventIdMode;
  /** Every owner must have a second factor (owner-totp.ts); absent: not required. */
  requireOwnerTotp?: boolean;
}

export interface AccountSuspension {
  /** The operator's reason, kept for the record; never shown to API callers. */
  reason: string;
  suspendedAt: string;
}

export interface ApiKeyRecord {
  id: string;
  accountId: string;
  name: string;
  /** Shown in listings so owners can tell keys apart, e.g. `svc_live_Ab3dE9`. */
  prefix: string;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  hash: string;
  createdAt: string;
  revokedAt: string | null;
  lastUsedAt?: string | null;
  /** What the key may do (access-control.ts). Absent on keys made before scopes existed: all scopes. */
  scopes?: ApiKeyScope[];
  /** Absent: `secret` (keys made before key types existed). */
  type?: ApiKeyType;
}

/** A person who signs in to the dashboard of one account. Stored in `control.owners`, keyed by email. */
export interface Owner {
  id: string;
  accountId: string;
  /** Trimmed and lower-cased. */
  email: string;
  /** scrypt hash with its parameters and salt (owner-password.ts); never the password. */
  passwordHash: string;
  createdAt: string;
  /** Set by an admin's password reset: sessions signed in before it end. */
  passwordChangedAt?: string;
  /** The second factor, sealed (owner-totp.ts); absent: password only. */
  totp?: OwnerTotp;
}

/** The scopes an API key may carry, and the two key types (access-control.ts says what each allows). */
export const API_KEY_SCOPES = ['events:write', 'events:read', 'usage:read'] as const;
export type ApiKeyScope = (typeof API_KEY_SCOPES)[number];
export const API_KEY_TYPES = ['secret', 'publishable'] as const;
export type ApiKeyType = (typeof API_KEY_TYPES)[number];

export interface CreateApiKeyOptions {
  /** Default DEFAULT_API_KEY_SCOPES; a publishable key is always `events:write` only. */
  scopes?: readonly ApiKeyScope[];
  /** Default `secret`. */
  type?: ApiKeyType;
}

export interface ControlPlaneReader {
  accountById(accountId: string): Account | undefined;
  listAccounts(): Account[];
  /** The key record whose hash matches, revoked or not; callers check `revokedAt`. */
  apiKeyByHash(hash: string): ApiKeyRecord | undefined;
  listApiKeys(accountId: string): ApiKeyRecord[];
  /** Some account allows this browser origin for its publishable keys (answers CORS preflights, which carry no key). */
  anyAccountAllowsOrigin(origin: string): boolean;
  ownerByEmail(email: string): Owner | undefined;
  listOwners(accountId: string): Owner[];
}

export interface ControlPlaneWriter {
  createAccount(input: { name: string; plan: Plan }): Promise<Account>;
  setPlan(accountId: string, plan: Plan): Promise<Account>;
  /** Returns the plain key once; only its hash is kept. */
  createApiKey(accountId: string, name: string, options?: CreateApiKeyOptions): Promise<{ record: ApiKeyRecord; plaintext: string }>;
  revokeApiKey(accountId: string, keyId: string): Promise<ApiKeyRecord>;
  /** Idempotent: a suspended account keeps its first suspension (and reason). */
  suspendAccount(accountId: string, reason: string): Promise<Account>;
  /** Idempotent: an account that is not suspended is returned as it is. */
  resumeAccount(accountId: string): Promise<Account>;
  /** Browser origins (`https://app.example.com`) for publishable keys; an empty list removes them all. */
  setAllowedOrigins(accountId: string, origins: readonly string[]): Promise<Account>;
  /** `separate` (the default, stored as absent) or `shared`: see publishable-ids.ts. */
  setPublishableEventIds(accountId: string, mode: PublishableEventIdMode): Promise<Account>;
  /** `passwordHash` from hashPassword(); an email already taken is refused (owner_exists). */
  createOwner(accountId: string, email: string, passwordHash: string): Promise<Owner>;
  /** A tombstone: the owner can no longer sign in and their sessions end. `owner_not_found` otherwise. */
  removeOwner(accountId: string, email: string): Promise<Owner>;
  /** Replaces the password hash; sessions signed in before end. `owner_not_found` otherwise. */
  resetOwnerPassword(accountId: string, email: string, passwordHash: string): Promise<Owner>;
  /**
   * The owner's own changes that keep their sessions: a stronger hash of the same password (at
   * sign-in), the second factor set (`null` removes it) or a recovery code used up.
   */
  updateOwnerCredentials(accountId: string, email: string, change: { passwordHash?: string; totp?: OwnerTotp | null }): Promise<Owner>;
  setRequireOwnerTotp(accountId: string, required: boolean): Promise<Account>;
}

export interface ControlPlane
  extends ControlPlaneReader, ControlPlaneWriter, MappingReader, MappingWriter, CrmCredentialLister, CrmCredentialResealer, AdminDirectory, Component {
  /** True once the state topics were read up to their end as of start(). */
  caughtUp(): boolean;
  /** Confirmed caught up with the state topics within `staleAfterMs` (part of readiness). */
  fresh(): boolean;
}

// --- CRM mappings and credentials (issue 5) -------------------------------------------------

export type CrmType = (typeof CRM_TYPES)[number];

/**
 * A stored credential, named by a mapping's `crm.credentialsRef`. Secrets are write-only: the
 * admin API and CLI show the name, type and non-secret fields, never `accessToken`/`secret`,
 * and loggers redact them. `baseUrl`/`instanceUrl` point adapters at the fake CRM in tests.
 */
export type CrmCredential =
  | { type: 'hubspot'; accessToken: string; baseUrl?: string; refreshToken?: string; auth?: OAuthAuth }
  | {
      type: 'salesforce';
      instanceUrl: string;
      /** Empty for a JWT bearer credential before its first grant: the sink's token manager supplies one. */
      accessToken: string;
      refreshToken?: string;
      privateKey?: string;
      auth?: OAuthAuth | JwtBearerAuth;
      apiVersion?: string;
      /** External ID fields used for upserts; defaults documented by the adapter. */
      contactExternalIdField?: string;
      accountExternalIdField?: string;
    }
  /** `previousSecret`: during a rotation it signs too, so receivers can switch secrets at their pace. */
  | { type: 'webhook'; url: string; secret: string; previousSecret?: string };

/**
 * A credential without its secret fields (crm-credential.ts splits them): what the admin API
 * shows, what the dry-run builds requests with, and what `control.crm-credentials` carries in
 * clear. `signsWithPreviousSecret`: a webhook credential's `previousSecret` is set.
 */
export type CrmCredentialSettings =
  | { type: 'hubspot'; baseUrl?: string; auth?: OAuthAuth }
  | {
      type: 'salesforce';
      instanceUrl: string;
      apiVersion?: string;
      contactExternalIdField?: string;
      accountExternalIdField?: string;
      auth?: OAuthAuth | JwtBearerAuth;
    }
  | { type: 'webhook'; url: string; signsWithPreviousSecret?: true };

export interface StoredCrmCredential {
  accountId: string;
  name: string;
  /** The non-secret fields. */
  credential: CrmCredentialSettings;
  updatedAt: string;
  /** The secret fields, encrypted for crm-sink's public key (credential-seal.ts). */
  sealed?: SealedSecrets;
  /**
   * A record written before secrets were encrypted: its secret fields in clear. crm-sink uses
   * them only when CRM_CREDENTIALS_ALLOW_PLAINTEXT is set; `npm run credentials-key -- rotate` seals them.
   */
  plaintextSecrets?: CrmSecrets;
}

/** One version of an account's mapping; every change is kept, the sink applies the newest. */
export interface StoredMapping {
  accountId: string;
  /** 1, 2, 3, ... per account. */
  version: number;
  mapping: CrmMapping;
  createdAt: string;
  /** Who made the change: `admin` (the ADMIN_TOKEN), `admin:<name>` (a named admin) or `owner:<email>` (dashboard). */
  author: string;
  /** This version deleted the mapping: the account's events are not synced (its `mapping` has no rules). */
  deleted?: true;
}

export interface MappingReader {
  /** The newest version, or undefined when the account has none or its newest version deleted it (the sink skips its events). */
  currentMapping(accountId: string): StoredMapping | undefined;
  /** The versions held in memory (the newest ones, see DEFAULT_MAPPING_VERSIONS_KEPT), oldest first. */
  mappingVersions(accountId: string): StoredMapping[];
  crmCredential(accountId: string, name: string): StoredCrmCredential | undefined;
}

export interface PutMappingOptions {
  /**
   * Optimistic concurrency (HTTP If-Match): the version the editor started from. The write is
   * refused with `mapping_version_mismatch` when another version is current by then, also when
   * another replica wins a race for the same version.
   */
  expectedVersion?: number;
}

export interface MappingWriter {
  /**
   * Validates (`mapping_invalid`: an InvalidMappingError listing every error with a JSON
   * Pointer), then stores version latest+1 after reading the topic to its end; returns it.
   * `account_not_found` for an unknown account.
   */
  putMapping(accountId: string, mapping: unknown, author: string, options?: PutMappingOptions): Promise<StoredMapping>;
  /** Stores a version that deletes the mapping (`mapping_not_found` when there is none; If-Match as putMapping). */
  deleteMapping(accountId: string, author: string, options?: PutMappingOptions): Promise<StoredMapping>;
  putCrmCredential(accountId: string, name: string, credential: CrmCredential): Promise<StoredCrmCredential>;
  /** A tombstone; `crm_credential_not_found`, or `crm_credential_in_use` while the current mapping names it. */
  deleteCrmCredential(accountId: string, name: string): Promise<void>;
}

/** For the admin API and CLI, which show credentials without their secrets. */
export interface CrmCredentialLister {
  /** By name; secrets are sealed (or, for a record from before encryption, in `plaintextSecrets`). */
  listCrmCredentials(accountId: string): StoredCrmCredential[];
  /** Every account's credentials: crm-sink's start-up check and the key rotation read them. */
  allCrmCredentials(): StoredCrmCredential[];
}

export interface CrmCredentialResealResult {
  /** Sealed with another key, re-wrapped for the new one. */
  rewrapped: number;
  /** Sealed under an older AAD version (v1: account, name, type only), sealed again under the current one. */
  upgraded: number;
  /** Plaintext records (from before encryption), now sealed. */
  encrypted: number;
  /** Already sealed with the new key. */
  unchanged: number;
  /** Could not be opened (a key id not configured, a tampered record): left as they were. */
  failed: { accountId: string; name: string; reason: string }[];
}

export interface CrmCredentialResealer {
  /**
   * Writes every credential again sealed for `to`: re-wraps the data key of sealed ones (the
   * secret itself is not decrypted), seals plaintext ones. `updatedAt` is kept: nothing changed
   * but the key. A credential put through the admin API during the run wins if written after
   * its re-wrap; one written just before it can be overwritten by the re-wrap of its previous
   * value, so rotate outside of credential changes.
   */
  resealCrmCredentials(keyring: CredentialKeyring, to: CredentialSealer): Promise<CrmCredentialResealResult>;
}
