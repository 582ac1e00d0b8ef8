import { describe, expect, it } from 'vitest';
import { hashApiKey } from './api-keys.js';
import {
  applyAccount,
  applyApiKey,
  createAccountDecoder,
  createApiKeyDecoder,
  createControlPlaneState,
  listAccounts,
  listApiKeys,
} from './control-plane.state.js';
import type { Account, ApiKeyRecord } from './types.js';

const account = (id: string, overrides: Partial<Account> = {}): Account => ({
  id,
  name: `Account ${id}`,
  plan: 'free',
  createdAt: '2026-01-01T00:00:00.000Z',
  updatedAt: '2026-01-01T00:00:00.000Z',
  ...overrides,
});

const key = (id: string, accountId: string, overrides: Partial<ApiKeyRecord> = {}): ApiKeyRecord => ({
  id,
  accountId,
  name: 'default',
  prefix: 'svc_live_Ab3dE9',
  hash: hashApiKey(`plain-${id}`),
  createdAt: '2026-01-01T00:00:00.000Z',
  revokedAt: null,
  ...overrides,
});

const buf = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

describe('control plane state', () => {
  it('upserts accounts (last write wins) and deletes them on a tombstone', () => {
    const state = createControlPlaneState();
    applyAccount(state, 'acc_a', account('acc_a'));
    applyAccount(state, 'acc_a', account('acc_a', { plan: 'pro', updatedAt: '2026-02-01T00:00:00.000Z' }));
    applyAccount(state, 'acc_b', account('acc_b', { createdAt: '2025-12-31T00:00:00.000Z' }));
    expect(state.accounts.get('acc_a')?.plan).toBe('pro');
    expect(listAccounts(state).map((a) => a.id)).toEqual(['acc_b', 'acc_a']);

    applyAccount(state, 'acc_a', null);
    expect(state.accounts.has('acc_a')).toBe(false);
    expect(listAccounts(state).map((a) => a.id)).toEqual(['acc_b']);
  });

  it('indexes keys by hash and by account', () => {
    const state = createControlPlaneState();
    const k1 = key('key_1', 'acc_a');
    const k2 = key('key_2', 'acc_a', { createdAt: '2026-01-02T00:00:00.000Z' });
    const k3 = key('key_3', 'acc_b');
    for (const k of [k2, k1, k3]) applyApiKey(state, k.id, k);
    expect(state.keysByHash.get(k1.hash)).toEqual(k1);
    expect(state.keysByHash.get(k3.hash)?.accountId).toBe('acc_b');
    expect(listApiKeys(state, 'acc_a').map((k) => k.id)).toEqual(['key_1', 'key_2']);
    expect(listApiKeys(state, 'acc_b').map((k) => k.id)).toEqual(['key_3']);
    expect(listApiKeys(state, 'acc_unknown')).toEqual([]);
  });

  it('keeps a revoked key findable by its hash, with revokedAt set', () => {
    const state = createControlPlaneState();
    const k = key('key_1', 'acc_a');
    applyApiKey(state, k.id, k);
    applyApiKey(state, k.id, { ...k, revokedAt: '2026-03-01T00:00:00.000Z' });
    expect(state.keysByHash.get(k.hash)?.revokedAt).toBe('2026-03-01T00:00:00.000Z');
    expect(listApiKeys(state, 'acc_a')).toHaveLength(1);
    expect(state.keys.size).toBe(1);
  });

  it('removes every index entry of a key on a tombstone', () => {
    const state = createControlPlaneState();
    const k = key('key_1', 'acc_a');
    applyApiKey(state, k.id, k);
    applyApiKey(state, k.id, null);
    expect(state.keys.has('key_1')).toBe(false);
    expect(state.keysByHash.has(k.hash)).toBe(false);
    expect(state.keysByAccount.has('acc_a')).toBe(false);
  });

  it('drops the stale hash and account entries when a record changes them', () => {
    const state = createControlPlaneState();
    const k = key('key_1', 'acc_a');
    applyApiKey(state, k.id, k);
    const moved = { ...k, accountId: 'acc_b', hash: hashApiKey('other') };
    applyApiKey(state, k.id, moved);
    expect(state.keysByHash.has(k.hash)).toBe(false);
    expect(state.keysByHash.get(moved.hash)?.id).toBe('key_1');
    expect(listApiKeys(state, 'acc_a')).toEqual([]);
    expect(listApiKeys(state, 'acc_b').map((r) => r.id)).toEqual(['key_1']);
  });
});

describe('control plane record decoding', () => {
  const decodeAccount = createAccountDecoder();
  const decodeApiKey = createApiKeyDecoder();

  it('decodes a valid account and keeps only the known fields', () => {
    const decoded = decodeAccount(buf('acc_a'), buf({ ...account('acc_a'), addedLater: 1 }));
    expect(decoded).toEqual({ ok: true, id: 'acc_a', value: account('acc_a') });
  });

  it('decodes a null value as a tombstone', () => {
    expect(decodeApiKey(buf('key_1'), null)).toEqual({ ok: true, id: 'key_1', value: null });
  });

  it('decodes a key record, with and without lastUsedAt', () => {
    const k = key('key_1', 'acc_a');
    expect(decodeApiKey(buf('key_1'), buf(k))).toEqual({ ok: true, id: 'key_1', value: k });
    const used = { ...k, lastUsedAt: '2026-01-05T00:00:00.000Z' };
    expect(decodeApiKey(buf('key_1'), buf(used))).toEqual({ ok: true, id: 'key_1', value: used });
  });

  it.each([
    ['missing_key', null, buf(account('acc_a'))],
    ['invalid_json', buf('acc_a'), buf('{not json')],
    ['schema_mismatch', buf('acc_a'), buf({ ...account('acc_a'), plan: 'enterprise' })],
    ['schema_mismatch', buf('acc_a'), buf('[]')],
    ['schema_mismatch', buf('acc_a'), buf('null')],
    ['id_mismatch', buf('acc_b'), buf(account('acc_a'))],
  ] as const)('refuses an account message: %s', (code, k, v) => {
    const decoded = decodeAccount(k, v);
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) expect(decoded.code).toBe(code);
  });

  it('refuses a key record without a proper hash, and never quotes the value in its reason', () => {
    const secret = 'svc_live_secretsecretsecret';
    const decoded = decodeApiKey(buf('key_1'), buf({ ...key('key_1', 'acc_a'), hash: secret }));
    expect(decoded.ok).toBe(false);
    if (!decoded.ok) {
      expect(decoded.code).toBe('schema_mismatch');
      expect(decoded.reason).toContain('/hash');
      expect(decoded.reason).not.toContain(secret);
    }
    const notJson = decodeApiKey(buf('key_1'), buf(`${secret} garbage`));
    expect(notJson.ok || notJson.reason.includes(secret)).toBe(false);
  });

  it('freezes decoded records so readers cannot change the shared state', () => {
    const decoded = decodeAccount(buf('acc_a'), buf(account('acc_a')));
    expect(decoded.ok && Object.isFrozen(decoded.value)).toBe(true);
  });
});
