import { readFileSync } from 'node:fs';
import { AppError } from '@ingest/platform';
import { type TProperties, Type } from '@sinclair/typebox';
import { type CredentialKeyring, type CredentialSealer, createCredentialKeyring, createCredentialSealer } from './credential-seal.js';

/**
 * Where the CRM credential keys come from (docs/security.md). The console (admin API, dashboard)
 * gets crm-sink's public key only; crm-sink gets its private key(s), as a file (a mounted
 * Secret) or as a secret environment variable. During a rotation crm-sink holds the old and the
 * new private key; records name theirs by key id.
 */
export const CrmCredentialsPublicKeyConfig = {
  /** PEM file of crm-sink's public key; credentials put through the admin API are sealed for it. */
  CRM_CREDENTIALS_PUBLIC_KEY_FILE: Type.String({ default: '' }),
  /** The same as PEM text (instead of the file). */
  CRM_CREDENTIALS_PUBLIC_KEY: Type.String({ default: '' }),
} satisfies TProperties;

export const CrmCredentialsPrivateKeysConfig = {
  /** Comma-separated PEM files of crm-sink's private keys (one, or the old and the new during a rotation). */
  CRM_CREDENTIALS_PRIVATE_KEY_FILES: Type.String({ default: '' }),
  /** The same as PEM text: one or several concatenated PEM blocks (a secret variable). */
  CRM_CREDENTIALS_PRIVATE_KEYS: Type.String({ default: '' }),
  /** Migration only: use credentials stored in clear (written before encryption) instead of refusing them. */
  CRM_CREDENTIALS_ALLOW_PLAINTEXT: Type.Boolean({ default: false }),
} satisfies TProperties;

function readKeyFile(variable: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    throw new AppError('invalid_config', `${variable}: cannot read ${path} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

function named<T>(variable: string, build: () => T): T {
  try {
    return build();
  } catch (err) {
    if (err instanceof AppError && err.code.startsWith('crm_credential_key')) throw new AppError('invalid_config', `${variable}: ${err.message}`);
    throw err;
  }
}

/** The gateway's sealer, or undefined when no public key is configured (storing credentials is then refused). */
export function credentialSealerFromConfig(config: {
  CRM_CREDENTIALS_PUBLIC_KEY_FILE: string;
  CRM_CREDENTIALS_PUBLIC_KEY: string;
}): CredentialSealer | undefined {
  if (config.CRM_CREDENTIALS_PUBLIC_KEY_FILE !== '') {
    const pem = readKeyFile('CRM_CREDENTIALS_PUBLIC_KEY_FILE', config.CRM_CREDENTIALS_PUBLIC_KEY_FILE);
    return named('CRM_CREDENTIALS_PUBLIC_KEY_FILE', () => createCredentialSealer(pem));
  }
  if (config.CRM_CREDENTIALS_PUBLIC_KEY.trim() !== '')
    return named('CRM_CREDENTIALS_PUBLIC_KEY', () => createCredentialSealer(config.CRM_CREDENTIALS_PUBLIC_KEY));
  return undefined;
}

/** crm-sink's keyring: required, since without it no credential can be opened. */
export function credentialKeyringFromConfig(config: { CRM_CREDENTIALS_PRIVATE_KEY_FILES: string; CRM_CREDENTIALS_PRIVATE_KEYS: string }): CredentialKeyring {
  const files = config.CRM_CREDENTIALS_PRIVATE_KEY_FILES.split(',')
    .map((f) => f.trim())
    .filter((f) => f !== '');
  const pems = [...files.map((f) => readKeyFile('CRM_CREDENTIALS_PRIVATE_KEY_FILES', f)), config.CRM_CREDENTIALS_PRIVATE_KEYS];
  return named('CRM_CREDENTIALS_PRIVATE_KEY_FILES or CRM_CREDENTIALS_PRIVATE_KEYS', () => createCredentialKeyring(pems.filter((p) => p.trim() !== '')));
}
