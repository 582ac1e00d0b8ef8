import { type Static, Type } from '@sinclair/typebox';

/**
 * Control plane records as they live in the compacted topics `control.accounts` (key accountId)
 * and `control.apikeys` (key id), and as the admin API (/admin/v1) shows them.
 *
 * Stored records tolerate unknown properties (no `additionalProperties: false`): a newer
 * release may add a field, and an older replica must keep the record during a rolling deploy
 * instead of dropping the account or key. Request bodies of the admin API are strict.
 */
export const PLAN_IDS = ['free', 'pro', 'growth'] as const;

// An enum rather than a union of literals: one clear validation error ("must be equal to one of
// the allowed values") instead of one per plan.
export const PlanSchema = Type.Unsafe<(typeof PLAN_IDS)[number]>({
  type: 'string',
  enum: [...PLAN_IDS],
  description: 'Plan: sets the monthly event allowance',
});

const Timestamp = Type.String({ minLength: 1, maxLength: 64, description: 'ISO 8601 timestamp (UTC)' });
const Id = Type.String({ minLength: 1, maxLength: 64 });
export const NAME_MAX_LENGTH = 200;
const Name = Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH });

export const API_KEY_SCOPE_IDS = ['events:write', 'events:read', 'usage:read'] as const;
export const API_KEY_TYPE_IDS = ['secret', 'publishable'] as const;
export const ApiKeyScopeSchema = Type.Unsafe<(typeof API_KEY_SCOPE_IDS)[number]>({
  type: 'string',
  enum: [...API_KEY_SCOPE_IDS],
  description: 'events:write (send events, bulk, CSV, job status), events:read (GET /v1/events/{eventId}), usage:read (GET /v1/usage)',
});
export const ApiKeyTypeSchema = Type.Unsafe<(typeof API_KEY_TYPE_IDS)[number]>({
  type: 'string',
  enum: [...API_KEY_TYPE_IDS],
  description: 'secret (svc_live_..., for servers) or publishable (svc_pub_..., events:write only, for browsers on the allowed origins)',
});
export const SUSPENSION_REASON_MAX = 500;
const Origin = Type.String({ minLength: 1, maxLength: 200, description: 'scheme://host[:port], e.g. https://app.example.com' });
const Origins = Type.Array(Origin, { maxItems: 20 });
/** Whether an eventId sent through a publishable key shares the secret keys' dedupe space (docs/security.md); absent: separate. */
export const PUBLISHABLE_EVENT_ID_MODES = ['separate', 'shared'] as const;
const PublishableEventIds = Type.Union(
  PUBLISHABLE_EVENT_ID_MODES.map((m) => Type.Literal(m)),
  {
    description:
      'separate (default): an eventId sent through a publishable key is its own event, apart from the same id sent through a secret key; shared: one event, for accounts that send the same ids from browser and server on purpose',
  },
);

export const AccountSchema = Type.Object({
  id: Id,
  name: Name,
  plan: PlanSchema,
  createdAt: Timestamp,
  updatedAt: Timestamp,
  suspension: Type.Optional(
    Type.Object({
      reason: Type.String({ minLength: 1, maxLength: SUSPENSION_REASON_MAX }),
      suspendedAt: Timestamp,
    }),
  ),
  allowedOrigins: Type.Optional(Origins),
  publishableEventIds: Type.Optional(PublishableEventIds),
  /** Every owner must sign in with a second factor (TOTP); absent: false. */
  requireOwnerTotp: Type.Optional(Type.Boolean()),
});

const apiKeyPublicProperties = {
  id: Id,
  accountId: Id,
  name: Name,
  prefix: Type.String({ minLength: 1, maxLength: 64, description: 'First characters of the key, to tell keys apart' }),
  createdAt: Timestamp,
  revokedAt: Type.Union([Timestamp, Type.Null()]),
  lastUsedAt: Type.Optional(Type.Union([Timestamp, Type.Null()])),
  scopes: Type.Optional(Type.Array(ApiKeyScopeSchema, { maxItems: API_KEY_SCOPE_IDS.length, description: 'Absent on keys made before scopes: every scope' })),
  type: Type.Optional(ApiKeyTypeSchema),
};

/** The stored key record: SHA-256 of the key (hex), never the key itself. */
export const ApiKeyRecordSchema = Type.Object({
  ...apiKeyPublicProperties,
  hash: Type.String({ pattern: '^[0-9a-f]{64}$' }),
});

/** A key as the admin API shows it: without its hash. */
export const ApiKeyViewSchema = Type.Object(apiKeyPublicProperties, { additionalProperties: false });

// Admin API (/admin/v1) requests and responses.
export const AccountViewSchema = Type.Object(
  { ...AccountSchema.properties, suspension: Type.Optional(Type.Object(AccountSchema.properties.suspension.properties, { additionalProperties: false })) },
  { additionalProperties: false },
);
export const AccountIdParams = Type.Object({ accountId: Type.String({ minLength: 1, maxLength: 100 }) });
export const ApiKeyIdParams = Type.Object({
  accountId: Type.String({ minLength: 1, maxLength: 100 }),
  keyId: Type.String({ minLength: 1, maxLength: 100 }),
});
export const CreateAccountBody = Type.Object({ name: Name, plan: PlanSchema }, { additionalProperties: false });
export const SetPlanBody = Type.Object({ plan: PlanSchema }, { additionalProperties: false });
export const CreateApiKeyBody = Type.Object(
  {
    name: Type.Optional(Name),
    scopes: Type.Optional(Type.Array(ApiKeyScopeSchema, { minItems: 1, maxItems: 10, description: 'Default: events:write, usage:read' })),
    type: Type.Optional(ApiKeyTypeSchema),
  },
  { additionalProperties: false },
);
export const SuspendAccountBody = Type.Object(
  { reason: Type.String({ minLength: 1, maxLength: SUSPENSION_REASON_MAX, description: 'Why; kept in the account record, never shown to API callers' }) },
  { additionalProperties: false },
);
export const ResumeAccountBody = Type.Object(
  { reason: Type.Optional(Type.String({ minLength: 1, maxLength: SUSPENSION_REASON_MAX, description: 'Why; logged' })) },
  { additionalProperties: false },
);
export const AllowedOriginsBody = Type.Object(
  { origins: Type.Array(Origin, { maxItems: 20, description: 'Browser origins publishable keys may send from; [] removes all' }) },
  { additionalProperties: false },
);
export const PublishableEventIdsBody = Type.Object({ mode: PublishableEventIds }, { additionalProperties: false });
export const AccountList = Type.Object({ accounts: Type.Array(AccountViewSchema) }, { additionalProperties: false });
export const ApiKeyList = Type.Object({ keys: Type.Array(ApiKeyViewSchema) }, { additionalProperties: false });
export const CreatedApiKey = Type.Object(
  {
    apiKey: Type.String({ description: 'The key itself; shown only in this response' }),
    key: ApiKeyViewSchema,
  },
  { additionalProperties: false },
);

export type PlanId = Static<typeof PlanSchema>;
export type AccountWire = Static<typeof AccountSchema>;
export type ApiKeyRecordWire = Static<typeof ApiKeyRecordSchema>;
export type ApiKeyView = Static<typeof ApiKeyViewSchema>;
export type CreateAccountBody = Static<typeof CreateAccountBody>;
export type SetPlanBody = Static<typeof SetPlanBody>;
export type CreateApiKeyBody = Static<typeof CreateApiKeyBody>;
export type SuspendAccountBody = Static<typeof SuspendAccountBody>;
export type ResumeAccountBody = Static<typeof ResumeAccountBody>;
export type AllowedOriginsBody = Static<typeof AllowedOriginsBody>;
export type PublishableEventIdsBody = Static<typeof PublishableEventIdsBody>;
export type PublishableEventIdMode = (typeof PUBLISHABLE_EVENT_ID_MODES)[number];
export type AccountIdParams = Static<typeof AccountIdParams>;
export type ApiKeyIdParams = Static<typeof ApiKeyIdParams>;
