import { AccountSchema, type AccountWire, ApiKeyRecordSchema, type ApiKeyRecordWire } from '@ingest/schemas';
import { createKeyedRecordDecoder, type RecordDecoder } from './keyed-record.decode.js';
import type { Account, ApiKeyRecord } from './types.js';

export type { DecodedKeyedRecord } from './keyed-record.decode.js';

/**
 * The materialised control plane: what the compacted topics say, folded into maps. Pure: the
 * store feeds it decoded messages in offset order; tests feed it directly.
 */
export interface ControlPlaneState {
  readonly accounts: Map<string, Account>;
  readonly keys: Map<string, ApiKeyRecord>;
  /** SHA-256 hex -> key record, revoked keys included (auth must see that a key was revoked). */
  readonly keysByHash: Map<string, ApiKeyRecord>;
  /** accountId -> (key id -> record). */
  readonly keysByAccount: Map<string, Map<string, ApiKeyRecord>>;
  /** Browser origin -> how many accounts allow it (CORS preflights carry no key to find the account by). */
  readonly originUse: Map<string, number>;
}

export function createControlPlaneState(): ControlPlaneState {
  return { accounts: new Map(), keys: new Map(), keysByHash: new Map(), keysByAccount: new Map(), originUse: new Map() };
}

/** `null` is a tombstone: the record is deleted. */
export function applyAccount(state: ControlPlaneState, id: string, account: Account | null): void {
  for (const origin of state.accounts.get(id)?.allowedOrigins ?? []) {
    const left = (state.originUse.get(origin) ?? 1) - 1;
    if (left <= 0) state.originUse.delete(origin);
    else state.originUse.set(origin, left);
  }
  if (account === null) {
    state.accounts.delete(id);
    return;
  }
  state.accounts.set(id, account);
  for (const origin of account.allowedOrigins ?? []) state.originUse.set(origin, (state.originUse.get(origin) ?? 0) + 1);
}

export function applyApiKey(state: ControlPlaneState, id: string, record: ApiKeyRecord | null): void {
  const previous = state.keys.get(id);
  if (previous) {
    // A record may move (in theory) to another hash or account: drop the old index entries first.
    if (state.keysByHash.get(previous.hash) === previous) state.keysByHash.delete(previous.hash);
    const ofAccount = state.keysByAccount.get(previous.accountId);
    ofAccount?.delete(id);
    if (ofAccount?.size === 0) state.keysByAccount.delete(previous.accountId);
  }
  if (record === null) {
    state.keys.delete(id);
    return;
  }
  state.keys.set(id, record);
  state.keysByHash.set(record.hash, record);
  let ofAccount = state.keysByAccount.get(record.accountId);
  if (!ofAccount) {
    ofAccount = new Map();
    state.keysByAccount.set(record.accountId, ofAccount);
  }
  ofAccount.set(id, record);
}

const byCreation = <T extends { id: string; createdAt: string }>(a: T, b: T): number =>
  a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;

export function listAccounts(state: ControlPlaneState): Account[] {
  return [...state.accounts.values()].sort(byCreation);
}

export function listApiKeys(state: ControlPlaneState, accountId: string): ApiKeyRecord[] {
  return [...(state.keysByAccount.get(accountId)?.values() ?? [])].sort(byCreation);
}

/** A decoder of records whose key is their `id` (accounts, API keys, admin credentials). */
export function createRecordDecoder<W extends { id: string }, T>(schema: object, pick: (wire: W) => T): RecordDecoder<T> {
  return createKeyedRecordDecoder<W, T>(schema, {
    keyOf: (wire) => wire.id,
    pick: (wire) => Object.freeze(pick(wire)),
    idMismatch: 'value id differs from the message key',
  });
}

// Unknown properties are tolerated on the wire (see schemas/src/control-plane.ts) and dropped here,
// so the state holds exactly the shape of the interfaces. Factories: schemas compile on use, not
// at import time.
export const createAccountDecoder = () =>
  createRecordDecoder<AccountWire, Account>(AccountSchema, (a) => ({
    id: a.id,
    name: a.name,
    plan: a.plan,
    createdAt: a.createdAt,
    updatedAt: a.updatedAt,
    ...(a.suspension !== undefined ? { suspension: { reason: a.suspension.reason, suspendedAt: a.suspension.suspendedAt } } : {}),
    ...(a.allowedOrigins !== undefined ? { allowedOrigins: [...a.allowedOrigins] } : {}),
    ...(a.publishableEventIds !== undefined ? { publishableEventIds: a.publishableEventIds } : {}),
    ...(a.requireOwnerTotp === true ? { requireOwnerTotp: true } : {}),
  }));

export const createApiKeyDecoder = () =>
  createRecordDecoder<ApiKeyRecordWire, ApiKeyRecord>(ApiKeyRecordSchema, (k) => ({
    id: k.id,
    accountId: k.accountId,
    name: k.name,
    prefix: k.prefix,
    hash: k.hash,
    createdAt: k.createdAt,
    revokedAt: k.revokedAt,
    ...(k.lastUsedAt !== undefined ? { lastUsedAt: k.lastUsedAt } : {}),
    ...(k.scopes !== undefined ? { scopes: [...k.scopes] } : {}),
    ...(k.type !== undefined ? { type: k.type } : {}),
  }));

// The TypeBox schemas and the interfaces of types.ts describe the same records; this fails to
// compile when one changes without the other.
type Same<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const schemasMatchInterfaces: [Same<AccountWire, Account>, Same<ApiKeyRecordWire, ApiKeyRecord>] = [true, true];
void schemasMatchInterfaces;
