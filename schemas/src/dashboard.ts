import { type Static, Type } from '@sinclair/typebox';
import { ApiKeyScopeSchema, ApiKeyTypeSchema, ApiKeyViewSchema, NAME_MAX_LENGTH } from './control-plane.js';

/**
 * The dashboard's JSON API (/dashboard/api), used by the web app in services/console/web.
 * Not part of the public v1 contract: hidden from the OpenAPI document.
 */
export const SignInBody = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 254 }),
    password: Type.String({ minLength: 1, maxLength: 256 }),
    /** The authenticator app's current code, for an owner with a second factor. */
    totpCode: Type.Optional(Type.String({ maxLength: 16 })),
    /** Instead of totpCode: one of the owner's recovery codes (each works once). */
    recoveryCode: Type.Optional(Type.String({ maxLength: 32 })),
  },
  { additionalProperties: false },
);

export const SessionView = Type.Object({
  email: Type.String(),
  account: Type.Object({ id: Type.String(), name: Type.String(), plan: Type.String() }),
  /** Send back as X-CSRF-Token on every state-changing request. */
  csrfToken: Type.String(),
  /** The account requires a second factor and this owner has none yet: only enrolment is open. */
  secondFactorSetupRequired: Type.Optional(Type.Boolean()),
});

/** The owner's second factor as the dashboard shows it (never the secret once enabled). */
export const TotpStatusView = Type.Object({
  enabled: Type.Boolean(),
  recoveryCodesLeft: Type.Integer(),
  accountRequiresTotp: Type.Boolean(),
});
export const TotpEnrolmentView = Type.Object({
  /** Base32, for typing into an authenticator app; shown only during enrolment. */
  secret: Type.String(),
  /** otpauth:// URI (the QR code encodes it). */
  uri: Type.String(),
});
export const TotpCodeBody = Type.Object({ code: Type.String({ minLength: 1, maxLength: 16 }) }, { additionalProperties: false });
export const TotpRecoveryCodesView = Type.Object({ recoveryCodes: Type.Array(Type.String()) });
export const AccountSecurityBody = Type.Object({ requireOwnerTotp: Type.Boolean() }, { additionalProperties: false });

export const DashboardKeyList = Type.Object({ keys: Type.Array(ApiKeyViewSchema) });
export const DashboardCreateKeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH }),
    scopes: Type.Optional(Type.Array(ApiKeyScopeSchema, { minItems: 1, maxItems: 10 })),
    type: Type.Optional(ApiKeyTypeSchema),
  },
  { additionalProperties: false },
);
export const DashboardKeyIdParams = Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_]+$' }) });

export const DashboardUsage = Type.Object({
  plan: Type.String(),
  limit: Type.Integer(),
  used: Type.Integer(),
  remaining: Type.Integer(),
  periodStart: Type.String(),
  periodEnd: Type.String(),
  /** The last 90 UTC days, oldest first, every day present (0 when none). */
  daily: Type.Array(Type.Object({ day: Type.String(), events: Type.Integer() })),
});

const OutcomeCounts = { synced: Type.Integer(), skipped: Type.Integer(), failed: Type.Integer() };

/** The account's CRM sync health (docs/dashboard.md, "Sync health"). */
export const DashboardSyncHealth = Type.Object({
  /** Null: the sink has not synced or failed anything for the account yet. */
  current: Type.Union([
    Type.Object({
      state: Type.Union([Type.Literal('running'), Type.Literal('failing'), Type.Literal('parked'), Type.Literal('credential_broken')]),
      reason: Type.Union([Type.String(), Type.Null()]),
      since: Type.String(),
      /** When the sync last stopped running without coming back; null while running. */
      unhealthySince: Type.Union([Type.String(), Type.Null()]),
      updatedAt: Type.String(),
      lastSuccessAt: Type.Union([Type.String(), Type.Null()]),
      lastFailureAt: Type.Union([Type.String(), Type.Null()]),
    }),
    Type.Null(),
  ]),
  last24h: Type.Object(OutcomeCounts),
  /** The last 168 UTC hours, oldest first, every hour present (0 when none). */
  hours: Type.Array(Type.Object({ hour: Type.String(), ...OutcomeCounts })),
});

export type SignInBody = Static<typeof SignInBody>;
export type SessionView = Static<typeof SessionView>;
export type TotpCodeBody = Static<typeof TotpCodeBody>;
export type AccountSecurityBody = Static<typeof AccountSecurityBody>;
export type DashboardKeyList = Static<typeof DashboardKeyList>;
export type DashboardCreateKeyBody = Static<typeof DashboardCreateKeyBody>;
export type DashboardKeyIdParams = Static<typeof DashboardKeyIdParams>;
export type DashboardUsage = Static<typeof DashboardUsage>;
export type DashboardSyncHealth = Static<typeof DashboardSyncHealth>;
