import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { credentialKeyringFromConfig, credentialSealerFromConfig } from './credential-keys.config.js';
import { credentialAad, createCredentialKeyring, createCredentialSealer, generateCredentialKeyPair, splitPemBlocks } from './credential-seal.js';
import { createCredentialOpener, credentialWithoutSecrets, joinCredential, splitCredential } from './crm-credential.js';

type Pair = ReturnType<typeof generateCredentialKeyPair>;
let a: Pair;
let b: Pair;
const SECRET = 'pat-na1-very-secret-token';
const aad = credentialAad('acc_1', 'main', 'hubspot');

beforeAll(() => {
  a = generateCredentialKeyPair(2048);
  b = generateCredentialKeyPair(2048);
});

describe('credential sealing (envelope: RSA-OAEP-256 wraps an AES-256-GCM data key)', () => {
  it('opens with the private key what the public key sealed, and the sealed form holds no secret', () => {
    const sealed = createCredentialSealer(a.publicKeyPem).seal({ accessToken: SECRET }, aad);
    expect(sealed).toMatchObject({ alg: 'RSA-OAEP-256+A256GCM', kid: a.kid });
    expect(JSON.stringify(sealed)).not.toContain(SECRET);
    expect(JSON.stringify(sealed)).not.toContain(Buffer.from(SECRET).toString('base64').slice(0, 12));
    expect(createCredentialKeyring([a.privateKeyPem]).open(sealed, aad)).toEqual({ accessToken: SECRET });
  });

  it('a fresh data key and nonce per seal: the same secret never seals the same way twice', () => {
    const sealer = createCredentialSealer(a.publicKeyPem);
    const [x, y] = [sealer.seal({ accessToken: SECRET }, aad), sealer.seal({ accessToken: SECRET }, aad)];
    expect(x.ciphertext).not.toBe(y.ciphertext);
    expect(x.wrappedKey).not.toBe(y.wrappedKey);
  });

  it('another key pair cannot open it, and a public key alone cannot be a keyring', () => {
    const sealed = createCredentialSealer(a.publicKeyPem).seal({ accessToken: SECRET }, aad);
    // Another key pair, even when the record is relabelled with its key id.
    expect(() => createCredentialKeyring([b.privateKeyPem]).open(sealed, aad)).toThrow(/not configured/);
    expect(() => createCredentialKeyring([b.privateKeyPem]).open({ ...sealed, kid: b.kid }, aad)).toThrow(/does not unwrap/);
    // What a gateway holds (the public key) is no private key.
    expect(() => createCredentialKeyring([a.publicKeyPem])).toThrow(expect.objectContaining({ code: 'crm_credential_key_invalid' }));
  });

  it('is bound to its record: a sealed secret moved to another account or name does not open', () => {
    const sealed = createCredentialSealer(a.publicKeyPem).seal({ accessToken: SECRET }, aad);
    const keyring = createCredentialKeyring([a.privateKeyPem]);
    expect(() => keyring.open(sealed, credentialAad('acc_2', 'main', 'hubspot'))).toThrow(expect.objectContaining({ code: 'crm_credential_unreadable' }));
    expect(() => keyring.open(sealed, credentialAad('acc_1', 'other', 'hubspot'))).toThrow(/does not authenticate/);
    const flipped = Buffer.from(sealed.ciphertext, 'base64');
    flipped[0] = (flipped[0] as number) ^ 1;
    expect(() => keyring.open({ ...sealed, ciphertext: flipped.toString('base64') }, aad)).toThrow(/does not authenticate/);
  });

  it('re-wraps for a new key without changing the ciphertext; a keyring with both keys opens both', () => {
    const old = createCredentialSealer(a.publicKeyPem).seal({ secret: 'whsec_x', previousSecret: 'whsec_y' }, aad);
    const rewrapped = createCredentialKeyring([a.privateKeyPem]).rewrap(old, createCredentialSealer(b.publicKeyPem));
    expect(rewrapped).toMatchObject({ kid: b.kid, ciphertext: old.ciphertext, tag: old.tag, iv: old.iv });
    expect(createCredentialKeyring([b.privateKeyPem]).open(rewrapped, aad)).toEqual({ secret: 'whsec_x', previousSecret: 'whsec_y' });
    expect(() => createCredentialKeyring([a.privateKeyPem]).open(rewrapped, aad)).toThrow(/not configured/);
    const both = createCredentialKeyring([`${a.privateKeyPem}\n${b.privateKeyPem}`]);
    expect(both.kids).toEqual([a.kid, b.kid]);
    expect(both.open(old, aad)).toEqual(both.open(rewrapped, aad));
  });

  it('refuses keys that are not RSA of at least 2048 bits', () => {
    const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    expect(() => createCredentialSealer(ec.publicKey)).toThrow(/RSA key of at least 2048 bits/);
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 });
    expect(() => createCredentialSealer(small.publicKey)).toThrow(/at least 2048/);
    expect(() => createCredentialSealer('not a key')).toThrow(/not a PEM public key/);
    expect(splitPemBlocks(`${a.privateKeyPem}${b.privateKeyPem}`)).toHaveLength(2);
  });
});

describe('credential keys from configuration', () => {
  it('reads the public key from a file or the variable, and names the variable when it is wrong', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-keys-'));
    writeFileSync(join(dir, 'public.pem'), a.publicKeyPem);
    expect(credentialSealerFromConfig({ CRM_CREDENTIALS_PUBLIC_KEY_FILE: join(dir, 'public.pem'), CRM_CREDENTIALS_PUBLIC_KEY: '' })?.kid).toBe(a.kid);
    expect(credentialSealerFromConfig({ CRM_CREDENTIALS_PUBLIC_KEY_FILE: '', CRM_CREDENTIALS_PUBLIC_KEY: b.publicKeyPem })?.kid).toBe(b.kid);
    expect(credentialSealerFromConfig({ CRM_CREDENTIALS_PUBLIC_KEY_FILE: '', CRM_CREDENTIALS_PUBLIC_KEY: '' })).toBeUndefined();
    expect(() => credentialSealerFromConfig({ CRM_CREDENTIALS_PUBLIC_KEY_FILE: join(dir, 'missing.pem'), CRM_CREDENTIALS_PUBLIC_KEY: '' })).toThrow(
      /CRM_CREDENTIALS_PUBLIC_KEY_FILE: cannot read .*missing\.pem \(ENOENT\)/,
    );
    expect(() => credentialSealerFromConfig({ CRM_CREDENTIALS_PUBLIC_KEY_FILE: '', CRM_CREDENTIALS_PUBLIC_KEY: 'garbage' })).toThrow(
      /^CRM_CREDENTIALS_PUBLIC_KEY: /,
    );
  });

  it('crm-sink needs at least one private key; files and the variable add up', () => {
    const dir = mkdtempSync(join(tmpdir(), 'crm-keys-'));
    writeFileSync(join(dir, 'a.pem'), a.privateKeyPem);
    expect(() => credentialKeyringFromConfig({ CRM_CREDENTIALS_PRIVATE_KEY_FILES: '', CRM_CREDENTIALS_PRIVATE_KEYS: '' })).toThrow(
      /CRM_CREDENTIALS_PRIVATE_KEY_FILES or CRM_CREDENTIALS_PRIVATE_KEYS: .*is required/,
    );
    const keyring = credentialKeyringFromConfig({ CRM_CREDENTIALS_PRIVATE_KEY_FILES: join(dir, 'a.pem'), CRM_CREDENTIALS_PRIVATE_KEYS: b.privateKeyPem });
    expect(keyring.kids).toEqual([a.kid, b.kid]);
  });
});

describe('credential split and opener', () => {
  it('keeps settings in clear and secrets apart, and joins them again', () => {
    const webhook = { type: 'webhook' as const, url: 'https://example.com/h', secret: 'whsec_new', previousSecret: 'whsec_old' };
    const { settings, secrets } = splitCredential(webhook);
    expect(settings).toEqual({ type: 'webhook', url: 'https://example.com/h', signsWithPreviousSecret: true });
    expect(JSON.stringify(settings)).not.toContain('whsec');
    expect(joinCredential(settings, secrets)).toEqual(webhook);
    expect(credentialWithoutSecrets(settings)).toEqual({ type: 'webhook', url: 'https://example.com/h', secret: '' });
  });

  it('opens sealed records, and refuses plaintext ones unless the migration setting allows them', () => {
    const keyring = createCredentialKeyring([a.privateKeyPem]);
    const stored = { accountId: 'acc_1', name: 'main', credential: { type: 'hubspot' as const }, updatedAt: 'x' };
    const sealed = { ...stored, sealed: createCredentialSealer(a.publicKeyPem).seal({ accessToken: SECRET }, aad) };
    const plain = { ...stored, plaintextSecrets: { accessToken: SECRET } };
    expect(createCredentialOpener({ keyring, allowPlaintext: false })(sealed)).toEqual({ type: 'hubspot', accessToken: SECRET });
    expect(() => createCredentialOpener({ keyring, allowPlaintext: false })(plain)).toThrow(expect.objectContaining({ code: 'crm_credential_plaintext' }));
    expect(createCredentialOpener({ keyring, allowPlaintext: true })(plain)).toEqual({ type: 'hubspot', accessToken: SECRET });
  });
});
