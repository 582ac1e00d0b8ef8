import { describe, expect, it } from 'vitest';
import {
  applyCrmCredential,
  applyMappingVersion,
  createCredentialDecoder,
  createCrmConfigState,
  createMappingDecoder,
  credentialKey,
  currentMapping,
  listCrmCredentials,
  mappingKey,
  mappingVersions,
} from './crm-config.state.js';

const mapping = { version: 1, crm: { type: 'hubspot', credentialsRef: 'main' }, rules: [] };

function record(accountId: string, version: number, writeId: string, author = 'admin') {
  return { accountId, version, writeId, mapping, createdAt: `2026-11-22T00:00:0${version}.000Z`, author };
}

function decodeAndApply(state: ReturnType<typeof createCrmConfigState>, value: ReturnType<typeof record>) {
  const decoded = createMappingDecoder()(Buffer.from(mappingKey(value.accountId, value.version, value.writeId)), Buffer.from(JSON.stringify(value)));
  if (!decoded.ok) throw new Error(decoded.reason);
  return applyMappingVersion(state, decoded.id, decoded.value);
}

describe('mapping versions fold', () => {
  it('holds only the newest versions in memory, however many are written; a stale record still loses', () => {
    const state = createCrmConfigState(3);
    for (let v = 1; v <= 50; v++) expect(decodeAndApply(state, record('acc_1', v, v.toString(16).padStart(16, '0')))).toBe('applied');
    expect(mappingVersions(state, 'acc_1').map((m) => m.version)).toEqual([48, 49, 50]);
    expect(currentMapping(state, 'acc_1')?.stored.version).toBe(50);
    expect(decodeAndApply(state, record('acc_1', 12, 'f'.repeat(16)))).toBe('stale_version');
    expect(createCrmConfigState().versionsKept).toBe(10);
  });

  it('keeps every version, oldest first, and the newest is current', () => {
    const state = createCrmConfigState();
    expect(decodeAndApply(state, record('acc_1', 1, 'a'.repeat(16)))).toBe('applied');
    expect(decodeAndApply(state, record('acc_1', 2, 'b'.repeat(16), 'owner:ada@example.com'))).toBe('applied');
    expect(decodeAndApply(state, record('acc_2', 1, 'c'.repeat(16)))).toBe('applied');
    expect(mappingVersions(state, 'acc_1').map((v) => [v.version, v.author])).toEqual([
      [1, 'admin'],
      [2, 'owner:ada@example.com'],
    ]);
    expect(currentMapping(state, 'acc_1')?.stored.version).toBe(2);
    expect(currentMapping(state, 'acc_2')?.stored.version).toBe(1);
    expect(currentMapping(state, 'acc_3')).toBeUndefined();
    expect(mappingVersions(state, 'acc_3')).toEqual([]);
  });

  it('gives a version to the first record that claims it: a racing second writer is ignored', () => {
    const state = createCrmConfigState();
    decodeAndApply(state, record('acc_1', 1, 'a'.repeat(16), 'first'));
    expect(decodeAndApply(state, record('acc_1', 1, 'b'.repeat(16), 'second'))).toBe('stale_version');
    expect(mappingVersions(state, 'acc_1')).toHaveLength(1);
    expect(currentMapping(state, 'acc_1')).toMatchObject({ key: mappingKey('acc_1', 1, 'a'.repeat(16)), stored: { author: 'first' } });
  });

  it('never lets an older version replace a newer one, and ignores tombstones', () => {
    const state = createCrmConfigState();
    decodeAndApply(state, record('acc_1', 2, 'a'.repeat(16)));
    expect(decodeAndApply(state, record('acc_1', 1, 'b'.repeat(16)))).toBe('stale_version');
    expect(applyMappingVersion(state, mappingKey('acc_1', 2, 'a'.repeat(16)), null)).toBe('ignored_tombstone');
    expect(currentMapping(state, 'acc_1')?.stored.version).toBe(2);
  });

  it('zero-pads the version in keys so they sort like numbers', () => {
    expect(mappingKey('acc_1', 12, 'f'.repeat(16))).toBe(`acc_1/00000012/${'f'.repeat(16)}`);
  });

  it('refuses records whose key is not theirs, bad JSON and bad shapes, without quoting the value', () => {
    const decode = createMappingDecoder();
    const value = record('acc_1', 1, 'a'.repeat(16));
    expect(decode(Buffer.from(mappingKey('acc_2', 1, 'a'.repeat(16))), Buffer.from(JSON.stringify(value)))).toMatchObject({ ok: false, code: 'id_mismatch' });
    expect(decode(Buffer.from('k'), Buffer.from('{nope'))).toMatchObject({ ok: false, code: 'invalid_json' });
    expect(decode(Buffer.from('k'), Buffer.from(JSON.stringify({ ...value, version: 0 })))).toMatchObject({ ok: false, code: 'schema_mismatch' });
    expect(decode(null, Buffer.from('{}'))).toMatchObject({ ok: false, code: 'missing_key' });
  });
});

describe('credentials fold', () => {
  const hubspot = (token: string) => ({
    accountId: 'acc_1',
    name: 'main',
    credential: { type: 'hubspot', accessToken: token },
    updatedAt: '2026-11-22T00:00:00.000Z',
  });

  it('keeps the last write per (account, name) and deletes on a tombstone', () => {
    const state = createCrmConfigState();
    const decode = createCredentialDecoder();
    for (const token of ['t1', 't2']) {
      const d = decode(Buffer.from(credentialKey('acc_1', 'main')), Buffer.from(JSON.stringify(hubspot(token))));
      if (!d.ok) throw new Error(d.reason);
      applyCrmCredential(state, d.id, d.value);
    }
    applyCrmCredential(state, credentialKey('acc_1', 'hooks'), {
      accountId: 'acc_1',
      name: 'hooks',
      credential: { type: 'webhook', url: 'https://example.com/h' },
      updatedAt: '2026-11-22T00:00:00.000Z',
    });
    expect(listCrmCredentials(state, 'acc_1').map((c) => c.name)).toEqual(['hooks', 'main']);
    // A record from before encryption: its secret is split off the settings, kept for a sink that allows plaintext.
    expect(state.credentials.get('acc_1')?.get('main')).toMatchObject({ credential: { type: 'hubspot' }, plaintextSecrets: { accessToken: 't2' } });

    applyCrmCredential(state, credentialKey('acc_1', 'main'), null);
    applyCrmCredential(state, credentialKey('acc_1', 'hooks'), null);
    expect(listCrmCredentials(state, 'acc_1')).toEqual([]);
    expect(state.credentials.has('acc_1')).toBe(false);
  });

  it('refuses a credential filed under another account', () => {
    const decoded = createCredentialDecoder()(Buffer.from(credentialKey('acc_2', 'main')), Buffer.from(JSON.stringify(hubspot('t'))));
    expect(decoded).toMatchObject({ ok: false, code: 'id_mismatch' });
  });
});
