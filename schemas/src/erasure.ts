import { type Static, Type } from '@sinclair/typebox';

/**
 * Erasure (GDPR/CCPA): the admin API's request and answer, and the suppression record of the
 * `control.erasures` topic. What identifies a person or company is a `type` and a `value`;
 * a new kind of identifier (a Segment-style `userId`, once `events` has `user_id` on every
 * server) is one more value of ErasureIdentifierType plus its column in
 * packages/domain/src/erasure/erasure-record.ts.
 */
export const ERASURE_IDENTIFIER_TYPES = ['email', 'domain'] as const;
export const ErasureIdentifierType = Type.Union(
  ERASURE_IDENTIFIER_TYPES.map((t) => Type.Literal(t)),
  { description: 'email: a person (every event with this email); domain: a company (every event with this domain)' },
);
export type ErasureIdentifierType = Static<typeof ErasureIdentifierType>;

export const EraseBody = Type.Object(
  {
    type: ErasureIdentifierType,
    // 320: the longest email the event rules accept (253 for domains is checked by the normaliser).
    value: Type.String({ minLength: 1, maxLength: 320, description: 'The email address or domain, normalised as the event rules do (trimmed, lower-cased)' }),
  },
  { additionalProperties: false },
);
export type EraseBody = Static<typeof EraseBody>;

export const ErasureResult = Type.Object({
  id: Type.String({ description: 'The erasure id, also in the audit record' }),
  accountId: Type.String(),
  type: ErasureIdentifierType,
  identifierHash: Type.String({
    description: 'SHA-256 of the account, type and normalised value: what the suppression list and the audit log keep instead of the value',
  }),
  erasedAt: Type.String({ format: 'date-time' }),
  counts: Type.Object({
    events: Type.Integer({ description: 'Distinct events of this identity deleted from ClickHouse `events`' }),
    crmRecords: Type.Integer({ description: "CRM sync state records (the sink's copy of a contact or company) deleted from Redis" }),
    pendingLinks: Type.Integer({ description: 'Pending contact-company links deleted from Redis' }),
    identityLinks: Type.Optional(
      Type.Integer({
        description:
          'Identity map entries (a Segment userId or anonymousId known under this email or domain) removed: tombstoned on the topic and deleted from Redis',
      }),
    ),
  }),
  complete: Type.Boolean({
    description:
      'true: the storage writer had passed every event that was in Kafka when the suppression was recorded, and the delete ran after it and finished, so nothing of this identity is left or can come back. false: the writer was behind (or the mutation still running) when the wait ended; the suppression holds, and repeating the same request later completes the delete',
  }),
});
export type ErasureResult = Static<typeof ErasureResult>;

export const ErasureReapplyResult = Type.Object({
  suppressions: Type.Integer({ description: 'Suppressions on the list' }),
  skipped: Type.Integer({ description: 'Suppressions of an identifier type this release does not know (written by a newer console)' }),
  events: Type.Integer({ description: 'Distinct events of suppressed identities found and deleted again' }),
  complete: Type.Boolean({ description: 'false: the delete was still running when the wait ended; it finishes in the background' }),
});
export type ErasureReapplyResult = Static<typeof ErasureReapplyResult>;

/** The suppression record, JSON value of `control.erasures`, keyed `<accountId>/<type>/<identifierHash>`. */
export const ErasureSuppressionRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  accountId: Type.String(),
  type: Type.String(),
  identifierHash: Type.String(),
  erasedAt: Type.String(),
});
export type ErasureSuppressionRecord = Static<typeof ErasureSuppressionRecord>;
