import {
  constants,
  createCipheriv,
  createDecipheriv,
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type KeyObject,
  privateDecrypt,
  publicEncrypt,
  randomBytes,
} from 'node:crypto';
import { AppError } from '@ingest/platform';

/**
 * Envelope encryption of CRM secrets (issue 18): each credential's secret fields are encrypted
 * with a fresh AES-256-GCM data key, and that data key is wrapped with crm-sink's RSA public key
 * (RSA-OAEP with SHA-256). Whoever holds only the public key (every gateway, the admin API, the
 * dashboard) can seal a credential but open none; only crm-sink holds the private key(s).
 *
 * RSA-OAEP over X25519+HKDF: node:crypto does it in one call each way (publicEncrypt /
 * privateDecrypt) with PEM keys that openssl and every secret manager handle, so nothing is
 * hand-assembled. The key id is derived from the public key (the first 16 hex digits of the
 * SHA-256 of its SPKI encoding), so an operator cannot label a key wrongly, and several private
 * keys can be configured during a rotation: each record names the one that opens it.
 *
 * The additional authenticated data binds the ciphertext to its record: a sealed secret copied
 * into another record, or left in its record with a changed URL, API version or auth setting,
 * does not open (crm-credential.ts builds it: AAD version 2 binds every clear field crm-sink acts
 * on; version 1, account/name/type only, still opens until `credentials-key rotate` re-seals it).
 */
export const SEAL_ALGORITHM = 'RSA-OAEP-256+A256GCM';

export interface SealedSecrets {
  alg: typeof SEAL_ALGORITHM;
  /** Which key pair wrapped the data key (credentialKeyId of its public key). */
  kid: string;
  /** The AES-256 data key, wrapped with the public key (base64). */
  wrappedKey: string;
  /** GCM nonce (12 bytes), ciphertext and tag (16 bytes), base64. */
  iv: string;
  ciphertext: string;
  tag: string;
  /**
   * Which additional authenticated data the record's secret is sealed under: absent for version 1
   * (account, name, type), 2 for every clear field crm-sink acts on (credentialAadV2).
   */
  aad?: number;
}

/** The secret fields of a CRM credential; everything else about it is not secret. */
export const CRM_SECRET_FIELDS = ['accessToken', 'secret', 'previousSecret', 'refreshToken', 'privateKey'] as const;
export type CrmSecrets = Partial<Record<(typeof CRM_SECRET_FIELDS)[number], string>>;

/** Seals with one public key: what a gateway holds. */
export interface CredentialSealer {
  readonly kid: string;
  seal(secrets: CrmSecrets, aad: string): SealedSecrets;
  /** Wraps a data key with the public key (base64): how a keyring re-wraps for this key. */
  wrapDataKey(dataKey: Buffer): string;
}

/** Opens with the configured private keys: what only crm-sink (and the rotation command) holds. */
export interface CredentialKeyring {
  /** The key ids it can open, in the order configured. */
  readonly kids: readonly string[];
  /** Throws AppError `crm_credential_unreadable` (unknown key id, wrong key, tampered record). */
  open(sealed: SealedSecrets, aad: string): CrmSecrets;
  /** The same secret under another public key: only the data key is unwrapped and wrapped again. */
  rewrap(sealed: SealedSecrets, to: CredentialSealer): SealedSecrets;
  /** A sealer for the public half of key `kid` (else the first configured): crm-sink seals the tokens it refreshes for itself. */
  sealer(kid?: string): CredentialSealer;
}

const OAEP = { padding: constants.RSA_PKCS1_OAEP_PADDING, oaepHash: 'sha256' } as const;
const MIN_MODULUS_BITS = 2048;

/**
 * AAD version 1: the record a sealed secret belongs to (account, name, type). Records sealed
 * before version 2 still open with it; new seals use credentialAadV2.
 */
export function credentialAad(accountId: string, name: string, type: string): string {
  return `crm-credential:v1:${accountId}/${name}:${type}`;
}

/** The AAD version new seals use (SealedSecrets.aad). */
export const CREDENTIAL_AAD_VERSION = 2;

/** The clear fields of a credential's `auth` that version 2 binds, in their fixed order. */
const AUTH_FIELDS = ['v', 'kind', 'clientId', 'connectionId', 'username', 'loginUrl', 'expiresAt', 'scope', 'connectedBy'] as const;

/**
 * AAD version 2: the record (account, name) and every clear field crm-sink acts on — type, every
 * URL, the API version, the Salesforce external id fields, the webhook's rotation flag and the
 * `auth` settings — as a JSON array in a fixed order, absent fields as null. JSON rather than a
 * join keeps fields apart (no `a:b` that two records could both produce), and listing absent
 * fields means adding one changes the AAD. Fields a newer release adds are not bound: binding one
 * is a new version.
 */
export function credentialAadV2(accountId: string, name: string, credential: { type: string }): string {
  const settings = credential as { type: string } & Record<string, unknown>;
  const field = (value: unknown) => (value === undefined ? null : value);
  const auth = typeof settings.auth === 'object' && settings.auth !== null ? (settings.auth as Record<string, unknown>) : undefined;
  return `crm-credential:v2:${JSON.stringify([
    accountId,
    name,
    settings.type,
    field(settings.url),
    field(settings.baseUrl),
    field(settings.instanceUrl),
    field(settings.apiVersion),
    field(settings.contactExternalIdField),
    field(settings.accountExternalIdField),
    field(settings.signsWithPreviousSecret),
    auth ? AUTH_FIELDS.map((f) => field(auth[f])) : field(settings.auth),
  ])}`;
}

export function credentialKeyId(publicKey: KeyObject): string {
  return createHash('sha256')
    .update(publicKey.export({ type: 'spki', format: 'der' }))
    .digest('hex')
    .slice(0, 16);
}

function rsaKey(key: KeyObject, what: string): KeyObject {
  const bits = key.asymmetricKeyDetails?.modulusLength ?? 0;
  if (key.asymmetricKeyType !== 'rsa' || bits < MIN_MODULUS_BITS) {
    throw new AppError('crm_credential_key_invalid', `${what} must be an RSA key of at least ${MIN_MODULUS_BITS} bits`);
  }
  return key;
}

function parsePublicKey(pem: string | KeyObject, what: string): KeyObject {
  try {
    return rsaKey(typeof pem === 'string' ? createPublicKey(pem) : pem, what);
  } catch (err) {
    if (err instanceof AppError) throw err;
    // The parser's message says nothing secret, but a PEM does not belong in a log either way.
    throw new AppError('crm_credential_key_invalid', `${what} is not a PEM public key`);
  }
}

export function createCredentialSealer(publicKeyPem: string | KeyObject, what = 'the CRM credentials public key'): CredentialSealer {
  const publicKey = parsePublicKey(publicKeyPem, what);
  const kid = credentialKeyId(publicKey);
  const wrapDataKey = (dataKey: Buffer) => publicEncrypt({ key: publicKey, ...OAEP }, dataKey).toString('base64');
  return {
    kid,
    wrapDataKey,
    seal(secrets, aad) {
      const dataKey = randomBytes(32);
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', dataKey, iv);
      cipher.setAAD(Buffer.from(aad, 'utf8'));
      const ciphertext = Buffer.concat([cipher.update(JSON.stringify(secrets), 'utf8'), cipher.final()]);
      const sealed: SealedSecrets = {
        alg: SEAL_ALGORITHM,
        kid,
        wrappedKey: wrapDataKey(dataKey),
        iv: iv.toString('base64'),
        ciphertext: ciphertext.toString('base64'),
        tag: cipher.getAuthTag().toString('base64'),
      };
      dataKey.fill(0);
      return sealed;
    },
  };
}

/**
 * Private keys as PEM text (one or several concatenated blocks). Two keys with the same id (the
 * same key pair twice) are one.
 */
export function createCredentialKeyring(privateKeyPems: readonly string[], what = 'a CRM credentials private key'): CredentialKeyring {
  const keys = new Map<string, KeyObject>();
  for (const pem of privateKeyPems.flatMap(splitPemBlocks)) {
    let key: KeyObject;
    try {
      key = createPrivateKey(pem);
    } catch {
      throw new AppError('crm_credential_key_invalid', `${what} is not a PEM private key`);
    }
    rsaKey(key, what);
    keys.set(credentialKeyId(createPublicKey(key)), key);
  }
  if (keys.size === 0) throw new AppError('crm_credential_key_missing', `${what} is required`);

  function unwrap(sealed: SealedSecrets): Buffer {
    if (sealed.alg !== SEAL_ALGORITHM) throw unreadable(`algorithm ${String(sealed.alg)} is not supported`);
    const key = keys.get(sealed.kid);
    if (!key) throw unreadable(`sealed with key ${sealed.kid}, which is not configured (configured: ${[...keys.keys()].join(', ')})`);
    try {
      return privateDecrypt({ key, ...OAEP }, Buffer.from(sealed.wrappedKey, 'base64'));
    } catch {
      throw unreadable(`the data key does not unwrap with key ${sealed.kid}`);
    }
  }

  return {
    kids: [...keys.keys()],
    open(sealed, aad) {
      const dataKey = unwrap(sealed);
      try {
        const decipher = createDecipheriv('aes-256-gcm', dataKey, Buffer.from(sealed.iv, 'base64'));
        decipher.setAAD(Buffer.from(aad, 'utf8'));
        decipher.setAuthTag(Buffer.from(sealed.tag, 'base64'));
        const plain = Buffer.concat([decipher.update(Buffer.from(sealed.ciphertext, 'base64')), decipher.final()]);
        return JSON.parse(plain.toString('utf8')) as CrmSecrets;
      } catch {
        // GCM refuses a changed ciphertext, tag, nonce or record (AAD): never half-decrypted text.
        throw unreadable('the sealed secret does not authenticate for this record');
      } finally {
        dataKey.fill(0);
      }
    },
    sealer(kid) {
      const key = (kid !== undefined ? keys.get(kid) : undefined) ?? [...keys.values()][0];
      return createCredentialSealer(createPublicKey(key as KeyObject));
    },
    rewrap(sealed, to) {
      const dataKey = unwrap(sealed);
      try {
        return { ...sealed, kid: to.kid, wrappedKey: to.wrapDataKey(dataKey) };
      } finally {
        dataKey.fill(0);
      }
    },
  };
}

function unreadable(reason: string): AppError {
  return new AppError('crm_credential_unreadable', `CRM credential cannot be decrypted: ${reason}`);
}

const PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[\s\S]+?-----END \1-----/g;

/** Every PEM block of a text; a text with none is returned whole (createPrivateKey then says why). */
export function splitPemBlocks(text: string): string[] {
  const blocks = text.match(PEM_BLOCK) ?? [];
  return blocks.length > 0 ? blocks : text.trim() === '' ? [] : [text];
}

/** A new key pair for crm-sink (3072-bit RSA, PEM): the stack, `npm start` and the key command make one. */
export function generateCredentialKeyPair(modulusLength = 3072): { publicKeyPem: string; privateKeyPem: string; kid: string } {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength });
  return {
    publicKeyPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    kid: credentialKeyId(publicKey),
  };
}
