import { createHash, randomBytes } from 'node:crypto';
import { ADMIN_NAME_PATTERN, ADMIN_ROLE_IDS, AdminCredentialWire, type AdminRoleId } from '@ingest/schemas';
import { AppError, type Logger } from '@ingest/platform';
import { toBase62 } from './api-keys.js';
import { createRecordDecoder } from './control-plane.state.js';
import type { RecordDecoder } from './keyed-record.decode.js';

/**
 * Named admins of the admin API. Each credential (a bearer token) belongs to a name and has a
 * role; a name may hold several credentials at once, so a token is rotated by creating the new
 * one, switching, then revoking the old one. Stored in the compacted topic `control.admins`,
 * keyed by credential id, as the SHA-256 of the token (32 random bytes, like API keys: no slow
 * hash is needed for a 256-bit secret). The ADMIN_TOKEN setting is the admin named `admin`
 * (role admin) and is not stored (admin-auth.ts in the gateway).
 */
export type AdminRole = AdminRoleId;
export const ADMIN_ROLES = ADMIN_ROLE_IDS;
export type AdminCredential = AdminCredentialWire;

/** Tokens shorter than this are refused (ADMIN_TOKEN at start, and every generated one is 32 random bytes). */
export const MIN_ADMIN_TOKEN_BYTES = 32;
export const ADMIN_TOKEN_PREFIX = 'adm_';
/** Active credentials in all: each is checked on every admin request, and the topic stays small. */
export const MAX_ACTIVE_ADMIN_CREDENTIALS = 50;
const TOKEN_CHARS = 43;
const DISPLAY_CHARS = 6;

export function hashAdminToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

export interface AdminsState {
  readonly byId: Map<string, AdminCredential>;
  readonly byHash: Map<string, AdminCredential>;
}

export function createAdminsState(): AdminsState {
  return { byId: new Map(), byHash: new Map() };
}

export function applyAdmin(state: AdminsState, id: string, credential: AdminCredential | null): void {
  const previous = state.byId.get(id);
  if (previous && state.byHash.get(previous.hash) === previous) state.byHash.delete(previous.hash);
  if (credential === null) {
    state.byId.delete(id);
    return;
  }
  state.byId.set(id, credential);
  state.byHash.set(credential.hash, credential);
}

export function createAdminDecoder(): RecordDecoder<AdminCredential> {
  return createRecordDecoder<AdminCredential, AdminCredential>(AdminCredentialWire, (c) => ({
    id: c.id,
    name: c.name,
    role: c.role,
    prefix: c.prefix,
    hash: c.hash,
    createdAt: c.createdAt,
    revokedAt: c.revokedAt,
  }));
}

export interface AdminDirectory {
  /** The credential whose token hashes to this, revoked or not (callers check `revokedAt`). */
  adminByTokenHash(hash: string): AdminCredential | undefined;
  listAdminCredentials(): AdminCredential[];
  /** Returns the token once; only its hash is kept. */
  createAdminCredential(name: string, role: AdminRole): Promise<{ credential: AdminCredential; token: string }>;
  /** Idempotent; `admin_credential_not_found` for an unknown id. */
  revokeAdminCredential(id: string): Promise<AdminCredential>;
}

/** What the control plane store lends the admin directory: its state, topic and write path. */
export interface AdminStoreParts {
  state: AdminsState;
  topic: string;
  barrier(what: string): Promise<void>;
  write(topic: string, key: string, value: object | null): Promise<void>;
  now: () => Date;
  log: Logger;
}

export function createAdminOps(parts: AdminStoreParts): AdminDirectory {
  const { state } = parts;
  return {
    adminByTokenHash: (hash) => state.byHash.get(hash),
    listAdminCredentials: () => [...state.byId.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id)),

    async createAdminCredential(name, role) {
      if (typeof name !== 'string' || !new RegExp(ADMIN_NAME_PATTERN).test(name)) {
        throw new AppError('invalid_admin_name', 'an admin name is 1 to 64 lower-case letters, digits and . _ @ -');
      }
      if (!(ADMIN_ROLES as readonly string[]).includes(role)) throw new AppError('invalid_admin_role', `role must be one of ${ADMIN_ROLES.join(', ')}`);
      await parts.barrier('catch up before the write');
      const active = [...state.byId.values()].filter((c) => c.revokedAt === null).length;
      if (active >= MAX_ACTIVE_ADMIN_CREDENTIALS) {
        throw new AppError('admin_credential_limit', `${active} admin credentials are active, the most allowed; revoke one first`);
      }
      const token = ADMIN_TOKEN_PREFIX + toBase62(randomBytes(32), TOKEN_CHARS);
      const credential: AdminCredential = {
        id: `adm_${toBase62(randomBytes(14), 20)}`,
        name,
        role,
        prefix: token.slice(0, ADMIN_TOKEN_PREFIX.length + DISPLAY_CHARS),
        hash: hashAdminToken(token),
        createdAt: parts.now().toISOString(),
        revokedAt: null,
      };
      await parts.write(parts.topic, credential.id, credential);
      parts.log.info({ adminCredentialId: credential.id, adminName: name, role }, 'admin credential created');
      return { credential, token };
    },

    async revokeAdminCredential(id) {
      await parts.barrier('catch up before the write');
      const current = state.byId.get(id);
      if (!current) throw new AppError('admin_credential_not_found', `admin credential ${id} does not exist`);
      if (current.revokedAt !== null) return current;
      const revoked: AdminCredential = { ...current, revokedAt: parts.now().toISOString() };
      await parts.write(parts.topic, id, revoked);
      parts.log.info({ adminCredentialId: id, adminName: current.name }, 'admin credential revoked');
      return revoked;
    },
  };
}
