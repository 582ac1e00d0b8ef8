import { AppError } from '@ingest/platform';
import {
  type CredentialKeyring,
  type CredentialSealer,
  credentialAad,
  CREDENTIAL_AAD_VERSION,
  credentialAadV2,
  CRM_SECRET_FIELDS,
  type CrmSecrets,
  type SealedSecrets,
} from './credential-seal.js';
import type { CrmCredential, CrmCredentialSettings, StoredCrmCredential } from './types.js';

/**
 * One owner for "which fields of a CRM credential are secret": the admin API splits a credential
 * into settings (clear) and secrets (sealed for crm-sink), and crm-sink joins them again.
 */
export function splitCredential(credential: CrmCredential | Record<string, unknown>): { settings: CrmCredentialSettings; secrets: CrmSecrets } {
  const settings: Record<string, unknown> = {};
  const secrets: CrmSecrets = {};
  for (const [field, value] of Object.entries(credential)) {
    if ((CRM_SECRET_FIELDS as readonly string[]).includes(field)) {
      if (typeof value === 'string') secrets[field as keyof CrmSecrets] = value;
    } else if (field !== 'signsWithPreviousSecret') settings[field] = value;
  }
  // From the secret when splitting a credential, from the stored flag when reading a sealed record.
  const flagged = (credential as Record<string, unknown>).signsWithPreviousSecret === true;
  if (settings.type === 'webhook' && (secrets.previousSecret !== undefined || flagged)) settings.signsWithPreviousSecret = true;
  return { settings: settings as CrmCredentialSettings, secrets };
}

export function joinCredential(settings: CrmCredentialSettings, secrets: CrmSecrets): CrmCredential {
  const { signsWithPreviousSecret: _flag, ...rest } = settings as CrmCredentialSettings & { signsWithPreviousSecret?: true };
  return { ...rest, ...secrets } as CrmCredential;
}

/** The credential with empty secrets: request builders (the dry-run) read only the settings. */
export function credentialWithoutSecrets(settings: CrmCredentialSettings): CrmCredential {
  return joinCredential(settings, settings.type === 'webhook' ? { secret: '' } : { accessToken: '' });
}

/** The AAD version a sealed record uses: absent is 1 (records sealed before version 2). */
export function sealedAadVersion(sealed: Pick<SealedSecrets, 'aad'>): number {
  return sealed.aad ?? 1;
}

/** What a record's AAD is built from: its identity and clear settings (a revocation request carries them too). */
export interface CredentialAadRecord {
  accountId: string;
  name: string;
  credential: { type: string };
}

/**
 * The AAD a stored record's secret opens with, by the version its envelope names; a version this
 * release does not know is `crm_credential_unreadable` (never a guess).
 */
export function storedCredentialAad(stored: CredentialAadRecord & { sealed?: Pick<SealedSecrets, 'aad'> }): string {
  const version = stored.sealed ? sealedAadVersion(stored.sealed) : CREDENTIAL_AAD_VERSION;
  if (version === 1) return credentialAad(stored.accountId, stored.name, stored.credential.type);
  if (version === 2) return credentialAadV2(stored.accountId, stored.name, stored.credential);
  throw new AppError('crm_credential_unreadable', `CRM credential cannot be decrypted: AAD version ${String(version)} is not known to this release`);
}

/** Seals a credential's secrets for its record under the current AAD version: every writer goes through here. */
export function sealCredentialSecrets(sealer: CredentialSealer, record: CredentialAadRecord, secrets: CrmSecrets): SealedSecrets {
  return { ...sealer.seal(secrets, credentialAadV2(record.accountId, record.name, record.credential)), aad: CREDENTIAL_AAD_VERSION };
}

/** Opens a sealed record's secrets with the AAD its envelope names; throws AppError `crm_credential_unreadable`. */
export function openCredentialSecrets(keyring: CredentialKeyring, stored: CredentialAadRecord & { sealed: SealedSecrets }): CrmSecrets {
  return keyring.open(stored.sealed, storedCredentialAad(stored));
}

/** Turns a stored credential into one an adapter can use; throws AppError with a dead-letter code. */
export type CredentialOpener = (stored: StoredCrmCredential) => CrmCredential;

export interface CredentialOpenerOptions {
  keyring: CredentialKeyring;
  /** Records from before encryption are used as they are (a migration setting, off by default). */
  allowPlaintext: boolean;
}

export function createCredentialOpener(options: CredentialOpenerOptions): CredentialOpener {
  return (stored) => {
    if (stored.sealed) {
      const credential = joinCredential(stored.credential, openCredentialSecrets(options.keyring, { ...stored, sealed: stored.sealed }));
      // A JWT bearer credential has no token of its own yet: the sink's token manager gets one.
      if (credential.type === 'salesforce') credential.accessToken ??= '';
      return credential;
    }
    if (options.allowPlaintext && stored.plaintextSecrets) return joinCredential(stored.credential, stored.plaintextSecrets);
    throw new AppError(
      'crm_credential_plaintext',
      `credential ${stored.name} is stored in clear: encrypt it (npm run credentials-key -- rotate) or set CRM_CREDENTIALS_ALLOW_PLAINTEXT during the migration`,
    );
  };
}
