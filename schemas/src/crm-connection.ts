import { type Static, Type } from '@sinclair/typebox';
import { CredentialName } from './crm-config.js';
import { CRM_OBJECTS, CRM_TYPES } from './mapping.js';

/**
 * The connection channel between the console and crm-sink (docs/crm-sync.md, "Connection
 * checks"): only crm-sink can open a stored credential, so "test connection" and the CRM's
 * object properties are asked of it. Requests are strict; answers carry `v: 1` and readers
 * accept fields a newer crm-sink adds (no answer object is closed).
 */
const AccountId = Type.String({ minLength: 1, maxLength: 100 });
const CrmType = Type.Unsafe<(typeof CRM_TYPES)[number]>({ type: 'string', enum: [...CRM_TYPES] });
const CrmObject = Type.Unsafe<(typeof CRM_OBJECTS)[number]>({ type: 'string', enum: [...CRM_OBJECTS] });

/** The console's `updatedAt` of the credential: crm-sink waits briefly until its control plane holds that record, so a check right after a save or rotation tests the new secret. */
const UpdatedAt = Type.Optional(Type.String({ minLength: 1, maxLength: 64 }));

export const ConnectionTestRequest = Type.Object({ accountId: AccountId, name: CredentialName, updatedAt: UpdatedAt }, { additionalProperties: false });
export type ConnectionTestRequest = Static<typeof ConnectionTestRequest>;

export const PropertiesRequest = Type.Object(
  { accountId: AccountId, name: CredentialName, object: CrmObject, updatedAt: UpdatedAt },
  { additionalProperties: false },
);
export type PropertiesRequest = Static<typeof PropertiesRequest>;

export const CONNECTION_OUTCOMES = ['connected', 'refused', 'unreachable', 'failed'] as const;

/** What one harmless authenticated call to the CRM answered, in plain words. */
export const ConnectionTestResult = Type.Object({
  v: Type.Literal(1),
  ok: Type.Boolean(),
  crm: CrmType,
  /**
   * connected: the CRM accepted the credential; refused: it refused it (401/403); unreachable: no
   * answer (timeout, address refused by the outbound policy, DNS); failed: any other answer.
   */
  outcome: Type.Unsafe<(typeof CONNECTION_OUTCOMES)[number]>({ type: 'string', enum: [...CONNECTION_OUTCOMES] }),
  /** The CRM's HTTP status; absent when it did not answer. */
  status: Type.Optional(Type.Integer()),
  message: Type.String({ maxLength: 600, description: "The CRM's answer in plain words; never a secret." }),
  checkedAt: Type.String(),
});
export type ConnectionTestResult = Static<typeof ConnectionTestResult>;

/** One property of a CRM object, the same shape for every CRM (version 1 of CrmPropertyList). */
export const CrmProperty = Type.Object({
  name: Type.String({ description: 'The API name a mapping writes to (HubSpot `name`, Salesforce field `name`).' }),
  label: Type.String(),
  type: Type.String({ description: "The CRM's own type name (HubSpot `type`, Salesforce field `type`)." }),
  readOnly: Type.Boolean({ description: 'The CRM refuses writes to it (HubSpot modificationMetadata.readOnlyValue, Salesforce not updateable).' }),
  options: Type.Optional(Type.Array(Type.Object({ value: Type.String(), label: Type.String() }), { description: 'Enumerations and picklists.' })),
});
export type CrmProperty = Static<typeof CrmProperty>;

export const CrmPropertyList = Type.Object({
  v: Type.Literal(1),
  crm: CrmType,
  object: CrmObject,
  properties: Type.Array(CrmProperty),
  /** More properties (or options) than the channel's bounds: the list is cut. */
  truncated: Type.Optional(Type.Boolean()),
});
export type CrmPropertyList = Static<typeof CrmPropertyList>;
