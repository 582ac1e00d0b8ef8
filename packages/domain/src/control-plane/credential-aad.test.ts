import { createLogger } from '@ingest/platform';
import { beforeAll, describe, expect, it } from 'vitest';
import { createCrmConfigOps } from './crm-config.ops.js';
import { applyCrmCredential, createCrmConfigState, createCredentialDecoder } from './crm-config.state.js';
import { credentialAad, credentialAadV2, createCredentialKeyring, createCredentialSealer, generateCredentialKeyPair } from './credential-seal.js';
import { createCredentialOpener, sealCredentialSecrets, splitCredential } from './crm-credential.js';
import type { CrmCredential, StoredCrmCredential } from './types.js';

type Pair = ReturnType<typeof generateCredentialKeyPair>;
let a: Pair;
let b: Pair;
const TOKEN = 'pat-na1-aad-test-token';

beforeAll(() => {
  a = generateCredentialKeyPair(2048);
  b = generateCredentialKeyPair(2048);
});

/** A record as putCrmCredential writes it: settings in clear, secrets sealed under the current AAD. */
function sealedRecord(credential: CrmCredential, accountId = 'acc_1', name = 'main'): StoredCrmCredential {
  const { settings, secrets } = splitCredential(credential);
  const record = { accountId, name, credential: settings, updatedAt: '2026-01-01T00:00:00.000Z' };
  return { ...record, sealed: sealCredentialSecrets(createCredentialSealer(a.publicKeyPem), record, secrets) };
}

describe('credential AAD version 2 (binds every clear field crm-sink acts on)', () => {
  const salesforce = {
    type: 'salesforce',
    instanceUrl: 'https://acme.my.salesforce.com',
    apiVersion: 'v60.0',
    contactExternalIdField: 'Ext_Id__c',
    accountExternalIdField: 'Acc_Id__c',
    auth: { v: 1, kind: 'jwt-bearer', clientId: 'app', username: 'sync@acme.com', loginUrl: 'https://test.salesforce.com' },
  };
  const base = credentialAadV2('acc_1', 'main', salesforce);

  it.each<[string, Record<string, unknown>]>([
    ['type', { type: 'hubspot' }],
    ['url', { url: 'https://evil.example/h' }],
    ['baseUrl', { baseUrl: 'https://evil.example' }],
    ['instanceUrl', { instanceUrl: 'https://evil.example' }],
    ['apiVersion', { apiVersion: 'v61.0' }],
    ['apiVersion removed', { apiVersion: undefined }],
    ['contactExternalIdField', { contactExternalIdField: 'Other__c' }],
    ['accountExternalIdField', { accountExternalIdField: undefined }],
    ['signsWithPreviousSecret', { signsWithPreviousSecret: true }],
    ['auth removed', { auth: undefined }],
    ['auth.clientId', { auth: { ...salesforce.auth, clientId: 'other' } }],
    ['auth.username', { auth: { ...salesforce.auth, username: 'admin@acme.com' } }],
    ['auth.loginUrl', { auth: { ...salesforce.auth, loginUrl: 'https://evil.example' } }],
    ['auth.kind', { auth: { ...salesforce.auth, kind: 'oauth', connectionId: '0123456789abcdef' } }],
  ])('changes when %s changes', (_field, change) => {
    expect(credentialAadV2('acc_1', 'main', { ...salesforce, ...change })).not.toBe(base);
  });

  it('changes with the account and the name, and keeps fields apart (no join two records could share)', () => {
    expect(credentialAadV2('acc_2', 'main', salesforce)).not.toBe(base);
    expect(credentialAadV2('acc_1', 'other', salesforce)).not.toBe(base);
    // With a `a/b:c` join these two would be the same string.
    expect(credentialAadV2('a/b', 'c', { type: 'hubspot' })).not.toBe(credentialAadV2('a', 'b/c', { type: 'hubspot' }));
    expect(credentialAadV2('acc_1', 'main', { ...salesforce })).toBe(base);
  });

  it('new seals are version 2 and open; the same record with another baseUrl is unreadable', () => {
    const stored = sealedRecord({ type: 'hubspot', accessToken: TOKEN, baseUrl: 'https://api.hubapi.com' });
    expect(stored.sealed?.aad).toBe(2);
    const open = createCredentialOpener({ keyring: createCredentialKeyring([a.privateKeyPem]), allowPlaintext: false });
    expect(open(stored)).toEqual({ type: 'hubspot', accessToken: TOKEN, baseUrl: 'https://api.hubapi.com' });
    const moved = { ...stored, credential: { ...stored.credential, baseUrl: 'https://attacker.example' } };
    expect(() => open(moved)).toThrow(expect.objectContaining({ code: 'crm_credential_unreadable', message: expect.stringMatching(/does not authenticate/) }));
    // Dropping the version tag (claiming v1) does not help: the ciphertext is bound to the v2 AAD.
    const { aad: _v, ...v1Claimed } = stored.sealed ?? {};
    expect(() => open({ ...moved, sealed: v1Claimed as NonNullable<StoredCrmCredential['sealed']> })).toThrow(/does not authenticate/);
  });

  it('records sealed under version 1 still open; an unknown version is unreadable and says why', () => {
    const keyring = createCredentialKeyring([a.privateKeyPem]);
    const open = createCredentialOpener({ keyring, allowPlaintext: false });
    const record = { accountId: 'acc_1', name: 'main', credential: { type: 'hubspot' as const, baseUrl: 'https://api.hubapi.com' }, updatedAt: 'x' };
    const v1 = { ...record, sealed: createCredentialSealer(a.publicKeyPem).seal({ accessToken: TOKEN }, credentialAad('acc_1', 'main', 'hubspot')) };
    expect(open(v1)).toMatchObject({ accessToken: TOKEN });
    expect(() => open({ ...v1, sealed: { ...v1.sealed, aad: 3 } })).toThrow(
      expect.objectContaining({ code: 'crm_credential_unreadable', message: expect.stringMatching(/AAD version 3 is not known/) }),
    );
  });
});

describe('credentials-key rotate (resealCrmCredentials) and AAD versions', () => {
  function opsWith(records: StoredCrmCredential[]) {
    const state = createCrmConfigState();
    const decode = createCredentialDecoder();
    const write = async (_topic: string, key: string, value: object | null) => {
      const decoded = decode(Buffer.from(key), value === null ? null : Buffer.from(JSON.stringify(value)));
      if (!decoded.ok) throw new Error(`the record does not decode: ${decoded.reason}`);
      applyCrmCredential(state, key, decoded.value);
    };
    const ops = createCrmConfigOps({
      state,
      mappingsTopic: 'm',
      credentialsTopic: 'c',
      barrier: async () => {},
      write,
      requireAccount: () => {},
      now: () => new Date(0),
      log: createLogger({ service: 'test', level: 'silent' }),
    });
    return { ops, seed: () => Promise.all(records.map((r) => write('c', `${r.accountId}/${r.name}`, r))) };
  }

  it('re-seals v1 records under v2 (same key or a new one), re-wraps v2 records, and every record still opens', async () => {
    const settings = { type: 'hubspot' as const, baseUrl: 'https://api.hubapi.com' };
    const v1 = {
      accountId: 'acc_1',
      name: 'old',
      credential: settings,
      updatedAt: 'x',
      sealed: createCredentialSealer(a.publicKeyPem).seal({ accessToken: TOKEN }, credentialAad('acc_1', 'old', 'hubspot')),
    };
    const v2 = sealedRecord({ type: 'hubspot', accessToken: TOKEN, baseUrl: 'https://api.hubapi.com' }, 'acc_1', 'new');
    const { ops, seed } = opsWith([v1, v2]);
    await seed();
    const keyring = createCredentialKeyring([a.privateKeyPem, b.privateKeyPem]);

    // Rotating to the current key: only the v1 record changes.
    expect(await ops.resealCrmCredentials(keyring, createCredentialSealer(a.publicKeyPem))).toEqual({
      rewrapped: 0,
      upgraded: 1,
      encrypted: 0,
      unchanged: 1,
      failed: [],
    });
    expect(ops.crmCredential('acc_1', 'old')?.sealed).toMatchObject({ aad: 2, kid: a.kid });

    // Then to a new key: both are re-wrapped, nothing left under v1.
    expect(await ops.resealCrmCredentials(keyring, createCredentialSealer(b.publicKeyPem))).toMatchObject({ rewrapped: 2, upgraded: 0, unchanged: 0 });
    const open = createCredentialOpener({ keyring: createCredentialKeyring([b.privateKeyPem]), allowPlaintext: false });
    for (const stored of ops.allCrmCredentials()) {
      expect(stored.sealed).toMatchObject({ aad: 2, kid: b.kid });
      expect(open(stored)).toMatchObject({ accessToken: TOKEN });
      // The re-sealed record now binds its URL too.
      expect(() => open({ ...stored, credential: { ...settings, baseUrl: 'https://attacker.example' } })).toThrow(/does not authenticate/);
    }
  });
});
