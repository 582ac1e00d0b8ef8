import { randomBytes } from 'node:crypto';
import { CrmCredentialBody, type StoredCrmCredentialRecord, type StoredMappingRecord, compileValidator } from '@ingest/schemas';
import type { ErrorObject } from 'ajv';
import { type MappingFieldError, validateMapping } from '../crm/mapping.validate.js';
import { AppError } from '@ingest/platform';
import { escapePointer } from '../events/validate-event.js';
import type { Logger } from '@ingest/platform';
import { allCrmCredentials, type CrmConfigState, credentialKey, currentMapping, listCrmCredentials, mappingKey, mappingVersions } from './crm-config.state.js';
import { CREDENTIAL_AAD_VERSION, type CredentialKeyring, type CredentialSealer, type SealedSecrets } from './credential-seal.js';
import { openCredentialSecrets, sealCredentialSecrets, sealedAadVersion, splitCredential } from './crm-credential.js';
import type {
  CrmCredential,
  CrmCredentialLister,
  CrmCredentialResealer,
  CrmCredentialResealResult,
  MappingReader,
  MappingWriter,
  StoredCrmCredential,
  StoredMapping,
} from './types.js';

/** A mapping document (or credential) that does not validate; `errors` point into it. */
export class InvalidConfigError extends AppError {
  readonly errors: MappingFieldError[];

  constructor(code: 'mapping_invalid' | 'crm_credential_invalid', message: string, errors: MappingFieldError[]) {
    super(code, message);
    this.errors = errors;
  }
}

/** If-Match failed: another version is current (or won the race for the next one). */
export class MappingVersionMismatchError extends AppError {
  readonly expectedVersion: number;
  readonly currentVersion: number | null;

  constructor(expected: number, current: number | null) {
    super('mapping_version_mismatch', `expected version ${expected} to be current, but ${current === null ? 'there is none' : `version ${current} is`}`);
    this.expectedVersion = expected;
    this.currentVersion = current;
  }
}

/** What the control plane store lends the CRM configuration: its state, topics and write path. */
export interface CrmConfigStoreParts {
  state: CrmConfigState;
  mappingsTopic: string;
  credentialsTopic: string;
  /** Waits until this instance has read both topics to their end. */
  barrier(what: string): Promise<void>;
  /** Produces and waits until this instance has applied the write; `null` is a tombstone. */
  write(topic: string, key: string, value: object | null): Promise<void>;
  /** Throws `account_not_found`. */
  requireAccount(accountId: string): void;
  now: () => Date;
  log: Logger;
  /** Seals credentials for crm-sink's public key; without one, storing a credential is refused. */
  sealer?: CredentialSealer;
}

const AUTHOR_MAX = 320;
// Races for one version are rare (two editors within milliseconds); a few attempts settle them.
const WRITE_ATTEMPTS = 3;

export function createCrmConfigOps(parts: CrmConfigStoreParts): MappingReader & MappingWriter & CrmCredentialLister & CrmCredentialResealer {
  const { state, log } = parts;

  async function putMapping(accountId: string, input: unknown, author: string, options: { expectedVersion?: number } = {}): Promise<StoredMapping> {
    const check = validateMapping(input);
    if (!check.ok) throw new InvalidConfigError('mapping_invalid', `the mapping has ${check.errors.length} error(s)`, check.errors);
    checkAuthor(author);
    await parts.barrier('catch up before the write');
    parts.requireAccount(accountId);
    const stored = await writeVersion(accountId, author, options.expectedVersion, () => ({ mapping: check.mapping }));
    log.info({ accountId, version: stored.version, author }, 'crm mapping stored');
    return stored;
  }

  /**
   * Deleting is a new version with `deleted: true` (history stays, and a later put starts again
   * from it): the sink stops syncing the account from the next event on. Its document keeps the
   * previous `crm` with no rules, which a release without `deleted` also syncs nothing with.
   */
  async function deleteMapping(accountId: string, author: string, options: { expectedVersion?: number } = {}): Promise<StoredMapping> {
    checkAuthor(author);
    await parts.barrier('catch up before the write');
    parts.requireAccount(accountId);
    const stored = await writeVersion(accountId, author, options.expectedVersion, (current) => {
      if (!current || current.deleted) throw new AppError('mapping_not_found', `account ${accountId} has no CRM mapping to delete`);
      return { mapping: { ...current.mapping, rules: [] }, deleted: true };
    });
    log.info({ accountId, version: stored.version, author }, 'crm mapping deleted');
    return stored;
  }

  async function writeVersion(
    accountId: string,
    author: string,
    expectedVersion: number | undefined,
    build: (current: StoredMapping | undefined) => { mapping: StoredMapping['mapping']; deleted?: true },
  ): Promise<StoredMapping> {
    for (let attempt = 1; attempt <= WRITE_ATTEMPTS; attempt++) {
      const currentEntry = currentMapping(state, accountId)?.stored;
      const current = currentEntry?.version ?? null;
      if (expectedVersion !== undefined && current !== expectedVersion) throw new MappingVersionMismatchError(expectedVersion, current);
      const { mapping, deleted } = build(currentEntry);
      const record: StoredMappingRecord = {
        accountId,
        version: (current ?? 0) + 1,
        writeId: randomBytes(8).toString('hex'),
        mapping,
        createdAt: parts.now().toISOString(),
        author,
        ...(deleted ? { deleted } : {}),
      };
      const key = mappingKey(accountId, record.version, record.writeId);
      await parts.write(parts.mappingsTopic, key, record);
      const winner = state.mappings.get(accountId)?.find((e) => e.stored.version === record.version);
      if (winner?.key === key) return winner.stored;
      // Another writer took this version first. Our record stays in the topic, ignored by every
      // reader (the fold keeps the first record of a version), so nothing needs undoing.
      log.info({ accountId, version: record.version, attempt }, 'crm mapping write lost a race for its version');
      if (expectedVersion !== undefined) throw new MappingVersionMismatchError(expectedVersion, currentMapping(state, accountId)?.stored.version ?? null);
    }
    throw new AppError('mapping_write_conflict', `mapping writes for ${accountId} keep racing; retry`, { retryable: true });
  }

  /** A tombstone: compaction then removes the secret from the topic. */
  async function deleteCrmCredential(accountId: string, name: string): Promise<void> {
    await parts.barrier('catch up before the write');
    parts.requireAccount(accountId);
    if (!state.credentials.get(accountId)?.has(name))
      throw new AppError('crm_credential_not_found', `account ${accountId} has no CRM credential named ${name}`);
    const current = currentMapping(state, accountId)?.stored;
    if (current && !current.deleted && current.mapping.crm.credentialsRef === name) {
      throw new AppError(
        'crm_credential_in_use',
        `mapping version ${current.version} syncs with credential ${name}: delete the mapping or point it at another credential first`,
      );
    }
    await parts.write(parts.credentialsTopic, credentialKey(accountId, name), null);
    log.info({ accountId, credentialName: name }, 'crm credential deleted');
  }

  async function putCrmCredential(accountId: string, name: string, credential: CrmCredential): Promise<StoredCrmCredential> {
    const errors = crmCredentialErrors(name, credential);
    if (errors.length > 0) throw new InvalidConfigError('crm_credential_invalid', `the credential has ${errors.length} error(s)`, errors);
    const { sealer } = parts;
    if (!sealer) {
      throw new AppError(
        'crm_credential_key_missing',
        "no public key to encrypt CRM credentials with is configured (CRM_CREDENTIALS_PUBLIC_KEY_FILE or CRM_CREDENTIALS_PUBLIC_KEY: crm-sink's public key)",
      );
    }
    await parts.barrier('catch up before the write');
    parts.requireAccount(accountId);
    const { settings, secrets } = splitCredential(credential);
    const sealed = sealCredentialSecrets(sealer, { accountId, name, credential: settings }, secrets);
    const record: StoredCrmCredentialRecord = { accountId, name, credential: settings, updatedAt: parts.now().toISOString(), sealed };
    await parts.write(parts.credentialsTopic, credentialKey(accountId, name), record);
    // The log names the credential, never its contents.
    log.info({ accountId, credentialName: name, crmType: credential.type, kid: sealed.kid }, 'crm credential stored');
    return { accountId, name, credential: settings, updatedAt: record.updatedAt, sealed };
  }

  async function resealCrmCredentials(keyring: CredentialKeyring, to: CredentialSealer): Promise<CrmCredentialResealResult> {
    await parts.barrier('catch up before the key rotation');
    const result: CrmCredentialResealResult = { rewrapped: 0, upgraded: 0, encrypted: 0, unchanged: 0, failed: [] };
    for (const stored of allCrmCredentials(state)) {
      const { accountId, name } = stored;
      const current = stored.sealed && sealedAadVersion(stored.sealed) === CREDENTIAL_AAD_VERSION;
      if (current && stored.sealed?.kid === to.kid) {
        result.unchanged += 1;
        continue;
      }
      let sealed: SealedSecrets;
      try {
        // A record under an older AAD is opened and sealed again (its secret is briefly in this
        // process's memory, as in crm-sink); one under the current AAD only has its data key re-wrapped.
        if (!stored.sealed) sealed = sealCredentialSecrets(to, stored, stored.plaintextSecrets ?? {});
        else if (current) sealed = keyring.rewrap(stored.sealed, to);
        else sealed = sealCredentialSecrets(to, stored, openCredentialSecrets(keyring, { ...stored, sealed: stored.sealed }));
      } catch (err) {
        result.failed.push({ accountId, name, reason: err instanceof Error ? err.message : String(err) });
        continue;
      }
      const record: StoredCrmCredentialRecord = { accountId, name, credential: stored.credential, updatedAt: stored.updatedAt, sealed };
      await parts.write(parts.credentialsTopic, credentialKey(accountId, name), record);
      if (!stored.sealed) result.encrypted += 1;
      else if (current) result.rewrapped += 1;
      else result.upgraded += 1;
    }
    log.info(
      {
        kid: to.kid,
        rewrapped: result.rewrapped,
        upgraded: result.upgraded,
        encrypted: result.encrypted,
        unchanged: result.unchanged,
        failed: result.failed.length,
      },
      'crm credentials resealed',
    );
    return result;
  }

  function checkAuthor(author: string): void {
    if (author.trim() === '' || author.length > AUTHOR_MAX) throw new AppError('invalid_author', `author must be 1 to ${AUTHOR_MAX} characters`);
  }

  return {
    // A deleted mapping is no mapping to its readers; its version stays in the history.
    currentMapping: (accountId) => {
      const stored = currentMapping(state, accountId)?.stored;
      return stored?.deleted ? undefined : stored;
    },
    mappingVersions: (accountId) => mappingVersions(state, accountId),
    crmCredential: (accountId, name) => state.credentials.get(accountId)?.get(name),
    listCrmCredentials: (accountId) => listCrmCredentials(state, accountId),
    allCrmCredentials: () => allCrmCredentials(state),
    resealCrmCredentials,
    putMapping,
    deleteMapping,
    putCrmCredential,
    deleteCrmCredential,
  };
}

let validateCredential: ReturnType<typeof compileCredentialValidator> | undefined;

/** Every error of a credential and its name, each with a JSON Pointer; empty when it may be stored. */
export function crmCredentialErrors(name: string, credential: unknown): MappingFieldError[] {
  validateCredential ??= compileCredentialValidator();
  const schemaErrors = validateCredential(credential);
  // The secret each way of authenticating needs is listed with the schema's errors, so one answer names every missing field.
  const auth = typeof credential === 'object' && credential !== null ? authErrors(credential as Record<string, unknown>) : [];
  return [...nameErrors(name), ...schemaErrors, ...auth.filter((a) => !schemaErrors.some((e) => e.field === a.field))];
}

/** What the schema cannot say: each way of authenticating needs its own secret. */
function authErrors(credential: Record<string, unknown>): MappingFieldError[] {
  if (credential.type !== 'hubspot' && credential.type !== 'salesforce') return [];
  const kind = (credential.auth as { kind?: string } | undefined)?.kind;
  const missing = (field: string, why: string): MappingFieldError => ({ field: `/${field}`, code: 'required', message: why });
  if (kind === 'oauth' && credential.refreshToken === undefined) return [missing('refreshToken', 'an OAuth credential needs its refresh token')];
  if (kind === 'jwt-bearer' && credential.privateKey === undefined) return [missing('privateKey', 'a JWT bearer credential needs the private key')];
  if (kind !== 'jwt-bearer' && credential.accessToken === undefined) return [missing('accessToken', 'must have required property accessToken')];
  if (kind !== 'oauth' && credential.refreshToken !== undefined) return [missing('auth', 'a refresh token needs auth.kind oauth')];
  if (kind !== 'jwt-bearer' && credential.privateKey !== undefined) return [missing('auth', 'a private key needs auth.kind jwt-bearer')];
  return [];
}

/** The fields of a credential that name where the sink connects, as JSON Pointers. */
export function credentialUrls(credential: unknown): { field: string; url: string }[] {
  if (typeof credential !== 'object' || credential === null) return [];
  return (['url', 'baseUrl', 'instanceUrl'] as const).flatMap((f) => {
    const value = (credential as Record<string, unknown>)[f];
    return typeof value === 'string' ? [{ field: `/${f}`, url: value }] : [];
  });
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

function nameErrors(name: string): MappingFieldError[] {
  return NAME.test(name)
    ? []
    : [{ field: '/name', code: 'invalid_format', message: 'must be 1 to 64 letters, digits, _ . or - (starting with a letter or digit)' }];
}

function compileCredentialValidator(): (input: unknown) => MappingFieldError[] {
  const validate = compileValidator(CrmCredentialBody, 'all');
  return (input) => (validate(input) ? [] : (validate.errors ?? []).map(credentialError));
}

function credentialError(e: ErrorObject): MappingFieldError {
  let field = e.instancePath;
  if (e.keyword === 'required') field += `/${escapePointer(String(e.params.missingProperty))}`;
  if (e.keyword === 'additionalProperties') field += `/${escapePointer(String(e.params.additionalProperty))}`;
  if (e.keyword === 'discriminator') return { field: '/type', code: 'invalid_value', message: 'must be one of hubspot, salesforce, webhook' };
  // ajv's messages name the rule, never the value, so a secret cannot leak through them.
  return { field: field || '/', code: KEYWORD_CODES[e.keyword] ?? 'invalid', message: e.message ?? 'is invalid' };
}

const KEYWORD_CODES: Record<string, string> = {
  required: 'required',
  type: 'invalid_type',
  maxLength: 'too_long',
  minLength: 'too_short',
  additionalProperties: 'unknown_field',
  pattern: 'invalid_format',
  enum: 'invalid_value',
  const: 'invalid_value',
};
