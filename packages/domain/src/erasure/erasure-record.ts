import { createHash } from 'node:crypto';
import type { ErasureIdentifierType, ErasureSuppressionRecord } from '@ingest/schemas';
import { normalizeDomain, normalizeEmail, type Normalized } from '../events/identity.js';

/**
 * The erasure suppression record (topic `control.erasures`), its one owner: how an identifier
 * is normalised and hashed, the record's key and JSON value, and which identifiers an event
 * carries. The list keeps SHA-256(account, type, normalised value), never the value: the list
 * and the audit log are kept for good, and keeping the erased email in them would undo the
 * erasure. (A hash of an email is pseudonymous, not anonymous: whoever guesses the email can
 * confirm it. docs/erasure.md says so.)
 */
export type { ErasureIdentifierType, ErasureSuppressionRecord };

export const ERASURE_RECORD_VERSION = 1;

/**
 * The `events` column of each identifier type. A Segment-style `userId` is one more entry
 * (`userId: 'user_id'`) once every supported server's `events` has `user_id`, plus its value in
 * `identifiersOf` below.
 */
export const ERASURE_COLUMNS: Readonly<Record<ErasureIdentifierType, string>> = { email: 'email', domain: 'domain' };

/** The identifier as the event rules normalise it, so it matches the stored events. */
export function normalizeIdentifier(type: ErasureIdentifierType, value: string): Normalized {
  return type === 'email' ? normalizeEmail(value) : normalizeDomain(value);
}

/** SHA-256 hex of account, type and normalised value, as a JSON array: no two inputs share one. */
export function identifierHash(accountId: string, type: string, normalized: string): string {
  return createHash('sha256')
    .update(JSON.stringify([accountId, type, normalized]))
    .digest('hex');
}

export function suppressionKey(record: Pick<ErasureSuppressionRecord, 'accountId' | 'type' | 'identifierHash'>): string {
  return `${record.accountId}/${record.type}/${record.identifierHash}`;
}

export function encodeSuppression(record: ErasureSuppressionRecord): string {
  return JSON.stringify(record);
}

/**
 * Reads a record of any version that names an account and a hash: a newer writer's record must
 * still suppress (failing open would let an erased person's events back in). `null` for what is
 * not a suppression at all.
 */
export function decodeSuppression(value: Buffer | string | null): Pick<ErasureSuppressionRecord, 'accountId' | 'type' | 'identifierHash'> | null {
  if (value === null) return null;
  try {
    const parsed = JSON.parse(value.toString()) as Partial<Record<string, unknown>>;
    const { accountId, type, identifierHash: hash } = parsed;
    if (typeof accountId !== 'string' || typeof type !== 'string' || typeof hash !== 'string' || !/^[0-9a-f]{64}$/.test(hash)) return null;
    return { accountId, type, identifierHash: hash };
  } catch {
    return null;
  }
}

/** What an event is identified by, for the suppression check (values as stored: normalised). */
export interface IdentifiedEvent {
  accountId: string;
  email?: string | null;
  domain?: string | null;
}

export function identifiersOf(event: IdentifiedEvent): { type: ErasureIdentifierType; value: string }[] {
  const out: { type: ErasureIdentifierType; value: string }[] = [];
  if (event.email) out.push({ type: 'email', value: event.email });
  if (event.domain) out.push({ type: 'domain', value: event.domain });
  return out;
}
