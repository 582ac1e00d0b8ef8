import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { IngestEvent } from './ingest-event.js';
import { CRM_OBJECTS, CRM_TYPES, CrmMapping } from './mapping.js';

/**
 * CRM mapping versions and CRM credentials (issue 5): the records of the compacted topics
 * `control.mappings` and `control.crm-credentials`, and the admin API's bodies for them.
 * Stored records tolerate unknown properties (a newer release may add one during a rolling
 * deploy); request bodies are strict.
 */
const Timestamp = Type.String({ minLength: 1, maxLength: 64, description: 'ISO 8601 timestamp (UTC)' });
const AccountId = Type.String({ minLength: 1, maxLength: 100 });
const Author = Type.String({ minLength: 1, maxLength: 320, description: 'Who made the change: admin, cli or owner:<email>.' });
const Version = Type.Integer({ minimum: 1, description: 'Version of the account mapping: 1, 2, 3, ...' });

export const CREDENTIAL_NAME_PATTERN = '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$';
export const CredentialName = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: CREDENTIAL_NAME_PATTERN,
  description: 'Name a mapping refers to in crm.credentialsRef: letters, digits, _ . - (at most 64).',
});

/** One mapping version in `control.mappings`, keyed `<accountId>/<version, 8 digits>/<writeId>`. */
export const StoredMappingRecord = Type.Object({
  accountId: AccountId,
  version: Version,
  /** Unique per write: two writers racing for one version get distinct keys, so compaction keeps both and every reader picks the first. */
  writeId: Type.String({ pattern: '^[0-9a-f]{16}$' }),
  mapping: Type.Object({}, { additionalProperties: true }),
  createdAt: Timestamp,
  author: Author,
  /**
   * A version that deletes the mapping: sync stops. Its `mapping` keeps the previous `crm` with no
   * rules, so a release that does not know this field plans nothing for the account either.
   */
  deleted: Type.Optional(Type.Literal(true)),
});
export type StoredMappingRecord = Static<typeof StoredMappingRecord>;

const HttpsOrHttpUrl = (description: string) => Type.String({ minLength: 1, maxLength: 2048, pattern: '^https?://[^\\s]+$', description });
const Secret = (description: string) => Type.String({ minLength: 1, maxLength: 4096, description: `${description} Write-only: never shown again.` });
const closed = <T extends Record<string, TSchema>>(properties: T) => Type.Object(properties, { additionalProperties: false });

const hubspotFields = { baseUrl: Type.Optional(HttpsOrHttpUrl('API base URL (default https://api.hubapi.com).')) };
const salesforceFields = {
  instanceUrl: HttpsOrHttpUrl('Org instance URL, e.g. https://acme.my.salesforce.com.'),
  apiVersion: Type.Optional(Type.String({ minLength: 1, maxLength: 16, pattern: '^v?[0-9]+\\.[0-9]+$' })),
  contactExternalIdField: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z][A-Za-z0-9_]*$' })),
  accountExternalIdField: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z][A-Za-z0-9_]*$' })),
};
const webhookFields = { url: HttpsOrHttpUrl('Where signed POSTs go.') };

/**
 * How the credential authenticates when it is not a bare token (docs/crm-sync.md, "OAuth
 * connections"). Versioned: a reader that does not know `v` or `kind` refuses the credential.
 * Records without `auth` (all written before it) are bare tokens and keep working unchanged.
 */
const OAuthAuthSchema = closed({
  v: Type.Literal(1),
  kind: Type.Literal('oauth'),
  clientId: Type.String({ minLength: 1, maxLength: 256, description: 'The OAuth app the tokens were issued to.' }),
  connectionId: Type.String({ pattern: '^[0-9a-f]{16}$', description: 'New per connection; tokens the sink refreshes are bound to it.' }),
  expiresAt: Type.Optional(Timestamp),
  scope: Type.Optional(Type.String({ maxLength: 1000 })),
  connectedBy: Type.Optional(Author),
});
const JwtBearerAuthSchema = closed({
  v: Type.Literal(1),
  kind: Type.Literal('jwt-bearer'),
  clientId: Type.String({ minLength: 1, maxLength: 256, description: "The connected app's consumer key." }),
  username: Type.String({ minLength: 1, maxLength: 320, description: 'The Salesforce user the sink acts as (pre-authorized for the app).' }),
  loginUrl: Type.Optional(HttpsOrHttpUrl('Default https://login.salesforce.com; https://test.salesforce.com for a sandbox.')),
});
const RefreshToken = Type.Optional(Secret('OAuth refresh token (with auth.kind oauth).'));

const credentialBranches = [
  closed({
    type: Type.Literal('hubspot'),
    accessToken: Secret('HubSpot private app token, or an OAuth access token with auth.kind oauth.'),
    refreshToken: RefreshToken,
    auth: Type.Optional(OAuthAuthSchema),
    ...hubspotFields,
  }),
  closed({
    type: Type.Literal('salesforce'),
    accessToken: Type.Optional(Secret('Salesforce OAuth access token (required unless auth.kind is jwt-bearer).')),
    refreshToken: RefreshToken,
    privateKey: Type.Optional(Secret('PEM private key whose certificate is uploaded to the connected app (auth.kind jwt-bearer).')),
    auth: Type.Optional(Type.Union([OAuthAuthSchema, JwtBearerAuthSchema])),
    ...salesforceFields,
  }),
  closed({
    type: Type.Literal('webhook'),
    secret: Secret('HMAC-SHA256 signing secret; `whsec_` + base64 (as Standard Webhooks libraries generate) is used as its decoded bytes.'),
    previousSecret: Type.Optional(Secret('The secret being rotated out: while set, deliveries are signed with both.')),
    ...webhookFields,
  }),
] as const;

/** PUT .../crm/credentials/{name}: a credential with its secret. */
export const CrmCredentialBody = Type.Unsafe<Static<(typeof credentialBranches)[number]>>({
  $id: 'CrmCredentialBody',
  // ajv's discriminator lets anything that is not an object pass; this refuses it.
  type: 'object',
  oneOf: [...credentialBranches],
  discriminator: { propertyName: 'type' },
  description: 'A CRM credential; the secret (accessToken or secret) is write-only.',
});
export type CrmCredentialBody = Static<typeof CrmCredentialBody>;

const Base64 = (maxLength: number) => Type.String({ minLength: 1, maxLength, pattern: '^[A-Za-z0-9+/]+={0,2}$' });

/** The secret fields of a credential, encrypted for crm-sink's public key (envelope: RSA-OAEP-256 wraps an AES-256-GCM data key). */
export const SealedSecretsSchema = Type.Object(
  {
    alg: Type.Literal('RSA-OAEP-256+A256GCM'),
    kid: Type.String({ pattern: '^[0-9a-f]{16}$', description: "Id of crm-sink's key pair: the first 16 hex digits of the SHA-256 of its public key (SPKI)." }),
    wrappedKey: Base64(2048),
    iv: Base64(32),
    ciphertext: Base64(16_384),
    tag: Base64(32),
    aad: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1000,
        description: 'AAD version the secret is sealed under: absent = 1 (account, name, type); 2 = every clear field crm-sink acts on.',
      }),
    ),
  },
  { additionalProperties: false },
);

/**
 * One credential in `control.crm-credentials`, keyed `<accountId>/<name>`. `credential` holds the
 * non-secret fields (type, URLs, API version); the secrets are in `sealed`. A record without
 * `sealed` was written before encryption and carries its secrets in `credential`.
 */
export const StoredCrmCredentialRecord = Type.Object({
  accountId: AccountId,
  name: CredentialName,
  credential: Type.Object({ type: Type.Unsafe<(typeof CRM_TYPES)[number]>({ type: 'string', enum: [...CRM_TYPES] }) }, { additionalProperties: true }),
  updatedAt: Timestamp,
  sealed: Type.Optional(SealedSecretsSchema),
});
export type StoredCrmCredentialRecord = Static<typeof StoredCrmCredentialRecord>;

/**
 * A credential as the admin API shows it: every field but the secret. The response serializer
 * drops properties not listed here, so a secret cannot reach a response even by mistake.
 */
export const CrmCredentialView = Type.Object(
  {
    name: CredentialName,
    type: Type.Unsafe<(typeof CRM_TYPES)[number]>({ type: 'string', enum: [...CRM_TYPES] }),
    updatedAt: Timestamp,
    baseUrl: Type.Optional(Type.String()),
    instanceUrl: Type.Optional(Type.String()),
    apiVersion: Type.Optional(Type.String()),
    contactExternalIdField: Type.Optional(Type.String()),
    accountExternalIdField: Type.Optional(Type.String()),
    url: Type.Optional(Type.String()),
    auth: Type.Optional(
      Type.Object(
        {
          kind: Type.String({ description: 'oauth (connected from the dashboard) or jwt-bearer (Salesforce server-to-server).' }),
          clientId: Type.Optional(Type.String()),
          username: Type.Optional(Type.String()),
          loginUrl: Type.Optional(Type.String()),
          expiresAt: Type.Optional(Type.String()),
          scope: Type.Optional(Type.String()),
          connectedBy: Type.Optional(Type.String()),
        },
        { additionalProperties: false, description: 'How the credential authenticates; absent: a bare token.' },
      ),
    ),
    signsWithPreviousSecret: Type.Optional(Type.Boolean({ description: 'Webhook: a previousSecret is set and signs too (a rotation is under way).' })),
  },
  { $id: 'CrmCredentialView', additionalProperties: false },
);
export type CrmCredentialView = Static<typeof CrmCredentialView>;
export const CrmCredentialList = Type.Object({ credentials: Type.Array(CrmCredentialView) }, { additionalProperties: false });

export const StoredMappingView = Type.Object(
  {
    accountId: AccountId,
    version: Version,
    mapping: CrmMapping,
    createdAt: Timestamp,
    author: Author,
    deleted: Type.Optional(Type.Literal(true, { description: 'This version deleted the mapping (its document keeps the crm, with no rules).' })),
  },
  { $id: 'StoredMappingView', additionalProperties: false },
);
export const MappingVersionSummary = Type.Object(
  { version: Version, createdAt: Timestamp, author: Author, deleted: Type.Optional(Type.Literal(true, { description: 'This version deleted the mapping.' })) },
  { additionalProperties: false },
);
export const DeletedCredentialView = Type.Object(
  { accountId: AccountId, name: CredentialName, deleted: Type.Literal(true) },
  { $id: 'DeletedCredentialView', additionalProperties: false, description: 'The credential is deleted (a tombstone in control.crm-credentials).' },
);
export const DeletedMappingView = Type.Object(
  { accountId: AccountId, version: Version, createdAt: Timestamp, author: Author, deleted: Type.Literal(true) },
  { $id: 'DeletedMappingView', additionalProperties: false, description: 'The version that deleted the mapping; sync stops from the next event on.' },
);
export const MappingVersionList = Type.Object(
  { accountId: AccountId, versions: Type.Array(MappingVersionSummary, { description: 'Newest first.' }) },
  { additionalProperties: false },
);

export const CrmAccountParams = Type.Object({ accountId: AccountId });
export const MappingVersionParams = Type.Object({
  accountId: AccountId,
  version: Type.String({ pattern: '^[1-9][0-9]{0,8}$', description: 'A version number, 1 or more.' }),
});
export const CredentialParams = Type.Object({ accountId: AccountId, name: CredentialName });
export type MappingVersionParams = Static<typeof MappingVersionParams>;
export type CredentialParams = Static<typeof CredentialParams>;

export const IF_MATCH_PATTERN = '^\\s*(\\*|(W/)?"?[1-9][0-9]{0,8}"?)\\s*$';
export const IfMatchHeaders = Type.Object({
  'if-match': Type.Optional(
    Type.String({ pattern: IF_MATCH_PATTERN, description: 'The version you edited as an entity tag ("3"), or *; 412 when another version is current.' }),
  ),
});

/** The documented dry-run request; the route validates the envelope and then each part precisely. */
export const DryRunRequest = Type.Object(
  {
    event: IngestEvent,
    mapping: Type.Optional(CrmMapping),
  },
  { additionalProperties: false, description: 'An event as POST /v1/events accepts it, and optionally a draft mapping (default: the current one).' },
);
export const DryRunEnvelope = Type.Object(
  { event: Type.Unknown(), mapping: Type.Optional(Type.Unknown()) },
  { additionalProperties: false, required: ['event'] },
);

const Values = Type.Record(Type.String(), Type.Unknown());
export const PlannedOperationSchema = Type.Object(
  {
    ruleId: Type.String(),
    object: Type.Unsafe<(typeof CRM_OBJECTS)[number]>({ type: 'string', enum: [...CRM_OBJECTS] }),
    key: Type.Union([Type.Object({ email: Type.String() }), Type.Object({ domain: Type.String() })]),
    set: Values,
    setOnce: Values,
    increment: Type.Record(Type.String(), Type.Number()),
    max: Type.Record(Type.String(), Type.Number()),
    min: Type.Record(Type.String(), Type.Number()),
    append: Type.Record(Type.String(), Type.Array(Type.Unknown())),
    activity: Type.Optional(Type.Object({ type: Type.String(), title: Type.String(), occurredAt: Type.String() })),
    skipped: Type.Array(
      Type.Object({
        field: Type.String(),
        reason: Type.Unsafe<'missing_value' | 'not_a_number'>({ type: 'string', enum: ['missing_value', 'not_a_number'] }),
        source: Type.String(),
      }),
    ),
  },
  { $id: 'PlannedOperation', description: 'One CRM upsert (and activity) the sink would make.' },
);

export const RULE_MISS_REASONS = ['event_name', 'condition', 'missing_identity'] as const;
export const RuleOutcomeSchema = Type.Object({
  ruleId: Type.String(),
  matched: Type.Boolean(),
  reason: Type.Optional(Type.Unsafe<(typeof RULE_MISS_REASONS)[number]>({ type: 'string', enum: [...RULE_MISS_REASONS] })),
});
export type RuleOutcome = Static<typeof RuleOutcomeSchema>;

export const CREDENTIAL_STATUSES = ['stored', 'missing', 'mismatch'] as const;
export const DRY_RUN_NOTE_CODES = [
  'crm_values_assumed_empty',
  'already_applied',
  'older_set_ignored',
  'activity_already_created',
  'record_id_placeholder',
  'link_ids_looked_up',
  'record_refused',
  'sent_at_is_send_time',
  'credential_missing',
  'credential_mismatch',
] as const;

/** One HTTP call as the sink's adapter sends it; headers (the credential, the webhook signature) are never shown. */
export const DryRunCall = Type.Object(
  {
    method: Type.Unsafe<'GET' | 'POST' | 'PATCH'>({ type: 'string', enum: ['GET', 'POST', 'PATCH'] }),
    path: Type.String({ description: "Path and query on the CRM's host, as the CRM receives them (webhook: the URL's own path)." }),
    body: Type.Optional(Type.Unknown({ description: 'The JSON body; absent for GET.' })),
  },
  { $id: 'DryRunCall', additionalProperties: false },
);

export const DryRunNote = Type.Object(
  {
    code: Type.Unsafe<(typeof DRY_RUN_NOTE_CODES)[number]>({ type: 'string', enum: [...DRY_RUN_NOTE_CODES] }),
    message: Type.String(),
    object: Type.Optional(Type.Unsafe<(typeof CRM_OBJECTS)[number]>({ type: 'string', enum: [...CRM_OBJECTS] })),
    key: Type.Optional(Type.String()),
    ruleId: Type.Optional(Type.String()),
    fields: Type.Optional(Type.Array(Type.String())),
  },
  { $id: 'DryRunNote', additionalProperties: false, description: 'What the calls assume or leave out, e.g. CRM values only a read would tell.' },
);

export const DryRunResult = Type.Object(
  {
    mappingVersion: Type.Union([Version, Type.Null()], { description: 'The stored version used, or null for a draft.' }),
    eventId: Type.String({ description: "The event's id (generated when the sample has none): part of every ledger and activity key." }),
    operations: Type.Array(PlannedOperationSchema),
    rules: Type.Array(RuleOutcomeSchema, { description: 'Every rule in mapping order, and why it did not match.' }),
    crm: Type.Object(
      {
        type: Type.Unsafe<(typeof CRM_TYPES)[number]>({ type: 'string', enum: [...CRM_TYPES] }),
        credentialsRef: Type.String(),
        credential: Type.Unsafe<(typeof CREDENTIAL_STATUSES)[number]>({
          type: 'string',
          enum: [...CREDENTIAL_STATUSES],
          description: 'stored: calls built with it; missing/mismatch: the sink would dead-letter the event, calls shown with the defaults of crm.type.',
        }),
      },
      { additionalProperties: false },
    ),
    calls: Type.Array(DryRunCall, {
      description: "The HTTP calls the sink would make for this event alone, in order, given the account's current sink state; nothing is written.",
    }),
    notes: Type.Array(DryRunNote),
  },
  { $id: 'DryRunResult', additionalProperties: false },
);
export type DryRunResult = Static<typeof DryRunResult>;
