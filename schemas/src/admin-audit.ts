import { type Static, Type } from '@sinclair/typebox';

/**
 * Named admins (their credentials in the compacted topic `control.admins`, keyed by credential
 * id) and the audit log (topic `audit.log`, not compacted, copied to the ClickHouse table
 * `audit_log`), as stored and as the admin API shows them.
 *
 * - `operator`: reads everything the admin API shows, suspends and resumes accounts, runs CRM
 *   dry-runs (which write nothing).
 * - `admin`: everything, including managing admins.
 */
export const ADMIN_ROLE_IDS = ['operator', 'admin'] as const;
export type AdminRoleId = (typeof ADMIN_ROLE_IDS)[number];
export const AdminRoleSchema = Type.Unsafe<AdminRoleId>({
  type: 'string',
  enum: [...ADMIN_ROLE_IDS],
  description: 'operator (read, suspend/resume, dry-runs) or admin (everything)',
});

export const ADMIN_NAME_PATTERN = '^[a-z0-9][a-z0-9._@-]{0,63}$';
const AdminName = Type.String({ pattern: ADMIN_NAME_PATTERN, description: 'Who the credential belongs to, e.g. ada or ada@example.com (lower case)' });
const Timestamp = Type.String({ minLength: 1, maxLength: 64 });

/** As stored: the SHA-256 of the token, never the token. Unknown properties tolerated (rolling deploys). */
export const AdminCredentialWire = Type.Object({
  id: Type.String({ minLength: 1, maxLength: 64 }),
  name: AdminName,
  role: AdminRoleSchema,
  prefix: Type.String({ minLength: 1, maxLength: 32 }),
  hash: Type.String({ pattern: '^[0-9a-f]{64}$' }),
  createdAt: Timestamp,
  revokedAt: Type.Union([Timestamp, Type.Null()]),
});
export type AdminCredentialWire = Static<typeof AdminCredentialWire>;

export const AdminCredentialView = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    role: AdminRoleSchema,
    prefix: Type.String({ description: 'The first characters of the token, to tell credentials apart' }),
    createdAt: Type.String(),
    revokedAt: Type.Union([Type.String(), Type.Null()]),
    source: Type.Unsafe<'control-plane' | 'environment'>({
      type: 'string',
      enum: ['control-plane', 'environment'],
      description: 'environment: ADMIN_TOKEN / ADMIN_TOKEN_PREVIOUS (name admin, role admin), not revocable here',
    }),
  },
  { $id: 'AdminCredentialView', additionalProperties: false },
);
export type AdminCredentialView = Static<typeof AdminCredentialView>;

export const AdminCredentialList = Type.Object({ admins: Type.Array(AdminCredentialView) }, { additionalProperties: false });

export const CreateAdminBody = Type.Object({ name: AdminName, role: AdminRoleSchema }, { additionalProperties: false });
export type CreateAdminBody = Static<typeof CreateAdminBody>;

export const CreatedAdminCredential = Type.Object(
  { token: Type.String({ description: 'The bearer token; shown only in this response' }), admin: AdminCredentialView },
  { additionalProperties: false },
);

export const AdminCredentialParams = Type.Object({ credentialId: Type.String({ pattern: '^adm_[0-9A-Za-z]{1,40}$' }) });
export type AdminCredentialParams = Static<typeof AdminCredentialParams>;

// --- the audit log ------------------------------------------------------------------------

export const AUDIT_ACTOR_TYPES = ['admin', 'owner'] as const;

/**
 * One state change, written after it took effect. `before`/`after` hold what changed, never a
 * secret (tokens, passwords, API keys, CRM credentials' secrets): the writer builds them from
 * the secret-free views and drops any field with a secret's name on top (audit-record.ts).
 */
export const AuditRecord = Type.Object(
  {
    v: Type.Literal(1),
    id: Type.String({ minLength: 1, maxLength: 64 }),
    at: Type.String({ description: 'When the change took effect (ISO 8601, UTC)' }),
    actor: Type.Object({
      type: Type.Unsafe<(typeof AUDIT_ACTOR_TYPES)[number]>({ type: 'string', enum: [...AUDIT_ACTOR_TYPES] }),
      name: Type.String({ minLength: 1, maxLength: 254, description: 'The admin name, or the owner email' }),
      role: Type.Optional(Type.String({ maxLength: 32 })),
    }),
    action: Type.String({ minLength: 1, maxLength: 64, description: 'e.g. account.create, key.revoke, owner.password_reset' }),
    accountId: Type.Union([Type.String({ maxLength: 64 }), Type.Null()]),
    target: Type.Union([Type.String({ maxLength: 300 }), Type.Null()], { description: 'What was changed: a key id, owner email, credential name...' }),
    ip: Type.String({ maxLength: 64, description: 'The client address (X-Forwarded-For only from trusted proxies)' }),
    requestId: Type.String({ maxLength: 64 }),
    before: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
    after: Type.Union([Type.Object({}, { additionalProperties: true }), Type.Null()]),
  },
  { $id: 'AuditRecord' },
);
export type AuditRecord = Static<typeof AuditRecord>;

export const AUDIT_PAGE_MAX = 500;

/** A page position, `<epoch ms>:<record id>` (any such string is a valid position). */
export const AUDIT_CURSOR_PATTERN = '^[0-9]{1,15}:[0-9a-f-]{1,64}$';

export const AuditQuery = Type.Object(
  {
    accountId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    actor: Type.Optional(Type.String({ minLength: 1, maxLength: 254, description: 'Admin name or owner email' })),
    action: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    from: Type.Optional(Type.String({ format: 'date-time', maxLength: 40, description: 'Inclusive (ISO 8601, e.g. 2026-01-31T00:00:00Z)' })),
    to: Type.Optional(Type.String({ format: 'date-time', maxLength: 40, description: 'Exclusive (ISO 8601)' })),
    limit: Type.Optional(Type.String({ pattern: '^[1-9][0-9]{0,2}$', description: `Records per page, at most ${AUDIT_PAGE_MAX} (default 100)` })),
    cursor: Type.Optional(Type.String({ pattern: AUDIT_CURSOR_PATTERN, maxLength: 80, description: 'nextCursor of the previous page' })),
  },
  { additionalProperties: false },
);
export type AuditQuery = Static<typeof AuditQuery>;

export const AuditPage = Type.Object(
  {
    records: Type.Array(AuditRecord),
    nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as cursor for the next (older) page; null on the last page' }),
  },
  { $id: 'AuditPage' },
);
export type AuditPage = Static<typeof AuditPage>;
