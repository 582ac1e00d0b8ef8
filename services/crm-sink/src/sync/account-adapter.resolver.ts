import { AppError } from '@ingest/platform';
import type { CrmCredential } from '@ingest/domain';
import type { CrmAdapter } from '../adapters/adapter.js';
import type { RecordFailure } from './flush.executor.js';
import type { SyncEngineDeps } from './sync-engine.deps.js';

/** The adapter an account's worker keeps, with the stored credential version it was opened from. */
export interface HeldAdapter {
  adapter?: { ref: string; adapter: CrmAdapter };
}

/**
 * The account's adapter for its current mapping's credential, or why there is none (a failure
 * its events are dead-lettered with). Kept in `held` until the credential changes.
 */
export function adapterFor(
  deps: Pick<SyncEngineDeps, 'mappings' | 'openCredential' | 'createAdapter'>,
  accountId: string,
  held: HeldAdapter,
): CrmAdapter | RecordFailure {
  const mapping = deps.mappings.currentMapping(accountId);
  if (!mapping) return { code: 'crm_mapping_missing', reason: 'the account has no CRM mapping any more' };
  const stored = deps.mappings.crmCredential(accountId, mapping.mapping.crm.credentialsRef);
  if (!stored) return { code: 'crm_credential_missing', reason: `no stored credential named ${mapping.mapping.crm.credentialsRef}` };
  if (stored.credential.type !== mapping.mapping.crm.type) {
    return {
      code: 'crm_credential_mismatch',
      reason: `credential ${stored.name} is for ${stored.credential.type}, the mapping is for ${mapping.mapping.crm.type}`,
    };
  }
  // Opened (decrypted) once per stored version; a re-wrap for a new key keeps the tag, and the adapter.
  // The clear settings are part of it: a record whose URL changed is opened again (and refused
  // when its AAD no longer verifies) rather than served by the adapter of the record it was.
  const ref = `${stored.name}@${stored.updatedAt}@${stored.sealed?.tag ?? 'plaintext'}@${JSON.stringify(stored.credential)}`;
  if (held.adapter?.ref !== ref) {
    let adapter: CrmAdapter;
    try {
      const credential: CrmCredential = deps.openCredential(stored);
      adapter = deps.createAdapter(credential, stored);
    } catch (err) {
      if (err instanceof AppError) return { code: err.code, reason: err.message };
      throw err;
    }
    if (held.adapter) void closeAdapter(held.adapter.adapter);
    held.adapter = { ref, adapter };
  }
  return held.adapter.adapter;
}

/** HTTP adapters own a keep-alive pool (`close`); the in-memory ones do not. */
export async function closeAdapter(adapter: CrmAdapter): Promise<void> {
  const closable = adapter as CrmAdapter & { close?: () => Promise<void> };
  await closable.close?.().catch(() => undefined);
}
