import { compileValidator } from '@ingest/schemas';
import type { DecodedKeyedRecord } from './keyed-record.decode.js';
import type { OwnerTotp } from './owner-totp.js';
import type { Owner } from './types.js';

/**
 * Account owners as the compacted topic `control.owners` holds them: keyed by the normalised
 * email, so an email names at most one owner and sign-in is unambiguous. Pure folding; the
 * store feeds decoded messages in offset order.
 */
export interface OwnersState {
  readonly byEmail: Map<string, Owner>;
}

export function createOwnersState(): OwnersState {
  return { byEmail: new Map() };
}

export function normaliseOwnerEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** `null` is a tombstone: the owner is removed. */
export function applyOwner(state: OwnersState, email: string, owner: Owner | null): void {
  if (owner === null) state.byEmail.delete(email);
  else state.byEmail.set(email, owner);
}

export function listOwners(state: OwnersState, accountId: string): Owner[] {
  return [...state.byEmail.values()]
    .filter((o) => o.accountId === accountId)
    .sort((a, b) => (a.createdAt < b.createdAt ? -1 : a.createdAt > b.createdAt ? 1 : 0));
}

// Unknown properties tolerated (rolling deploys), as for the other control records.
const OwnerWireSchema = {
  type: 'object',
  required: ['id', 'accountId', 'email', 'passwordHash', 'createdAt'],
  properties: {
    id: { type: 'string', minLength: 1, maxLength: 64 },
    accountId: { type: 'string', minLength: 1, maxLength: 64 },
    email: { type: 'string', minLength: 3, maxLength: 254 },
    passwordHash: { type: 'string', minLength: 1, maxLength: 512 },
    createdAt: { type: 'string', minLength: 1, maxLength: 64 },
    passwordChangedAt: { type: 'string', minLength: 1, maxLength: 64 },
    totp: {
      type: 'object',
      required: ['sealed', 'enabledAt', 'recoveryCodeHashes'],
      properties: {
        sealed: {
          type: 'object',
          required: ['alg', 'kid', 'iv', 'ciphertext', 'tag'],
          properties: {
            alg: { type: 'string', maxLength: 32 },
            kid: { type: 'string', maxLength: 64 },
            iv: { type: 'string', maxLength: 64 },
            ciphertext: { type: 'string', maxLength: 256 },
            tag: { type: 'string', maxLength: 64 },
          },
        },
        enabledAt: { type: 'string', minLength: 1, maxLength: 64 },
        recoveryCodeHashes: { type: 'array', maxItems: 32, items: { type: 'string', maxLength: 128 } },
      },
    },
  },
} as const;

export function createOwnerDecoder(): (key: Buffer | null, value: Buffer | null) => DecodedKeyedRecord<Owner> {
  const validate = compileValidator(OwnerWireSchema);
  return (key, value) => {
    const email = key?.toString('utf8') ?? '';
    if (email === '') return { ok: false, code: 'missing_key', reason: 'message has no key' };
    if (value === null) return { ok: true, id: email, value: null };
    let parsed: unknown;
    try {
      parsed = JSON.parse(value.toString('utf8'));
    } catch {
      return { ok: false, code: 'invalid_json', reason: 'value is not JSON' };
    }
    if (!validate(parsed)) return { ok: false, code: 'schema_mismatch', reason: `value ${validate.errors?.[0]?.instancePath || '/'} is invalid` };
    const o = parsed as unknown as Owner;
    if (o.email !== email) return { ok: false, code: 'id_mismatch', reason: 'value email differs from the message key' };
    return {
      ok: true,
      id: email,
      value: Object.freeze({
        id: o.id,
        accountId: o.accountId,
        email: o.email,
        passwordHash: o.passwordHash,
        createdAt: o.createdAt,
        ...(o.passwordChangedAt ? { passwordChangedAt: o.passwordChangedAt } : {}),
        ...(o.totp ? { totp: pickTotp(o.totp) } : {}),
      }),
    };
  };
}

/** Only the known fields: a newer writer's additions are dropped, not carried in state. */
function pickTotp(t: OwnerTotp): OwnerTotp {
  const { alg, kid, iv, ciphertext, tag } = t.sealed;
  return { sealed: { alg, kid, iv, ciphertext, tag }, enabledAt: t.enabledAt, recoveryCodeHashes: [...t.recoveryCodeHashes] };
}
