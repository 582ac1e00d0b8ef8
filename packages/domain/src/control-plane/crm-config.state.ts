import { type CrmMapping, StoredCrmCredentialRecord, StoredMappingRecord } from '@ingest/schemas';
import { createKeyedRecordDecoder } from './keyed-record.decode.js';
import { splitCredential } from './crm-credential.js';
import type { StoredCrmCredential, StoredMapping } from './types.js';

/**
 * The materialised CRM configuration: mapping versions (`control.mappings`) and credentials
 * (`control.crm-credentials`). Pure: the store feeds it decoded messages in offset order.
 *
 * Mapping versions are append-only history. Each version has its own key
 * (`<accountId>/<version>/<writeId>`), so compaction keeps every version. Two writers that race
 * for the same version write different keys; the record first in the (single-partition) log
 * wins, on every instance and after every replay, and the other is ignored: this is what turns
 * If-Match into a real compare-and-set across gateway replicas.
 */
export interface CrmConfigState {
  /** accountId -> the newest `versionsKept` versions, oldest first. */
  readonly mappings: Map<string, MappingEntry[]>;
  /** Versions held in memory per account (each document up to 256 KiB); older ones stay in the topic only. */
  readonly versionsKept: number;
  /** accountId -> (credential name -> credential). */
  readonly credentials: Map<string, Map<string, StoredCrmCredential>>;
}

export interface MappingEntry {
  /** The message key that won this version. */
  key: string;
  stored: StoredMapping;
}

/**
 * Every gateway and sink held every version of every account's mapping, each up to 256 KiB, so
 * an owner saving often grew the memory of all of them. The newest versions are enough: the
 * sink applies the newest, the dashboard shows a recent history.
 */
export const DEFAULT_MAPPING_VERSIONS_KEPT = 10;

export function createCrmConfigState(versionsKept = DEFAULT_MAPPING_VERSIONS_KEPT): CrmConfigState {
  if (!Number.isInteger(versionsKept) || versionsKept < 1) throw new RangeError('versionsKept must be a positive integer');
  return { mappings: new Map(), credentials: new Map(), versionsKept };
}

const VERSION_DIGITS = 8;

export function mappingKey(accountId: string, version: number, writeId: string): string {
  return `${accountId}/${String(version).padStart(VERSION_DIGITS, '0')}/${writeId}`;
}

export function credentialKey(accountId: string, name: string): string {
  return `${accountId}/${name}`;
}

export type MappingApplied = 'applied' | 'stale_version' | 'ignored_tombstone';

/**
 * A version is taken by the first record that claims it; a record for a version at or below the
 * newest one is a lost race and changes nothing. History is append-only: tombstones are ignored.
 */
export function applyMappingVersion(state: CrmConfigState, key: string, record: StoredMappingWithKey | null): MappingApplied {
  if (record === null) return 'ignored_tombstone';
  const versions = state.mappings.get(record.stored.accountId) ?? [];
  const newest = versions.at(-1)?.stored.version ?? 0;
  if (record.stored.version <= newest) return 'stale_version';
  versions.push({ key, stored: record.stored });
  if (versions.length > state.versionsKept) versions.splice(0, versions.length - state.versionsKept);
  state.mappings.set(record.stored.accountId, versions);
  return 'applied';
}

export function applyCrmCredential(state: CrmConfigState, key: string, record: StoredCrmCredential | null): void {
  if (record === null) {
    // A tombstone's key is all there is: names have no `/`, so the last one separates them.
    const at = key.lastIndexOf('/');
    const ofAccount = state.credentials.get(key.slice(0, at));
    ofAccount?.delete(key.slice(at + 1));
    if (ofAccount?.size === 0) state.credentials.delete(key.slice(0, at));
    return;
  }
  let ofAccount = state.credentials.get(record.accountId);
  if (!ofAccount) {
    ofAccount = new Map();
    state.credentials.set(record.accountId, ofAccount);
  }
  ofAccount.set(record.name, record);
}

export function currentMapping(state: CrmConfigState, accountId: string): MappingEntry | undefined {
  return state.mappings.get(accountId)?.at(-1);
}

export function mappingVersions(state: CrmConfigState, accountId: string): StoredMapping[] {
  return (state.mappings.get(accountId) ?? []).map((e) => e.stored);
}

export function allCrmCredentials(state: CrmConfigState): StoredCrmCredential[] {
  return [...state.credentials.values()].flatMap((byName) => [...byName.values()]);
}

export function listCrmCredentials(state: CrmConfigState, accountId: string): StoredCrmCredential[] {
  return [...(state.credentials.get(accountId)?.values() ?? [])].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export interface StoredMappingWithKey {
  stored: StoredMapping;
  writeId: string;
}

const VALUE_NOT_OF_KEY = 'value does not belong to the message key';

// Factories: schemas compile on use, not at import time. The mapping document itself was
// validated when written; it is kept as written so a newer release's additions survive.
export const createMappingDecoder = () =>
  createKeyedRecordDecoder<StoredMappingRecord, StoredMappingWithKey>(StoredMappingRecord, {
    keyOf: (r) => mappingKey(r.accountId, r.version, r.writeId),
    idMismatch: VALUE_NOT_OF_KEY,
    pick: (r) => ({
      writeId: r.writeId,
      stored: Object.freeze({
        accountId: r.accountId,
        version: r.version,
        mapping: r.mapping as CrmMapping,
        createdAt: r.createdAt,
        author: r.author,
        ...(r.deleted === true ? { deleted: true as const } : {}),
      }),
    }),
  });

export const createCredentialDecoder = () =>
  createKeyedRecordDecoder<StoredCrmCredentialRecord, StoredCrmCredential>(StoredCrmCredentialRecord, {
    keyOf: (r) => credentialKey(r.accountId, r.name),
    idMismatch: VALUE_NOT_OF_KEY,
    pick: (r) => {
      // Secret fields in clear next to a sealed secret (a hand-made record) are dropped, not kept.
      const { settings, secrets } = splitCredential(r.credential);
      const hasPlaintext = Object.keys(secrets).length > 0;
      return Object.freeze({
        accountId: r.accountId,
        name: r.name,
        credential: settings,
        updatedAt: r.updatedAt,
        ...(r.sealed ? { sealed: r.sealed } : hasPlaintext ? { plaintextSecrets: secrets } : {}),
      });
    },
  });
