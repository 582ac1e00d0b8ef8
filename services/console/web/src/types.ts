// The dashboard API's shapes, derived from the JSON Schemas in schemas/ (type-only import:
// nothing of TypeBox reaches the bundle).
import type {
  ApiKeyView,
  AuditPage,
  BulkJobReceipt,
  ConnectionTestResult,
  CrmCredentialView,
  CrmMapping,
  CrmPropertyList,
  DashboardSyncHealth,
  DashboardUsage,
  JobStatus,
  SessionView,
  StoredEvent,
} from '@ingest/schemas';

export type { AuditPage, CrmPropertyList, DashboardSyncHealth, DashboardUsage, SessionView };
export interface TotpStatus {
  enabled: boolean;
  recoveryCodesLeft: number;
  accountRequiresTotp: boolean;
}
export type KeyView = ApiKeyView;
export interface CreatedApiKeyView {
  apiKey: string;
  key: KeyView;
}
export type JobView = JobStatus;
export type JobReceipt = BulkJobReceipt;
export interface MappingVersionView {
  version: number;
  createdAt: string;
  author: string;
  /** This version deleted the mapping: sync was off from it on. */
  deleted?: true;
}
/** The dry-run answer: rendered field by field, so fields added later (e.g. exact HTTP calls) show up too. */
export interface DryRunView {
  mappingVersion: number | null;
  operations: unknown[];
  rules: { ruleId: string; matched: boolean; reason?: string }[];
  [field: string]: unknown;
}
export interface StoredMappingView extends MappingVersionView {
  accountId: string;
  mapping: CrmMapping;
}
export type StoredEventView = StoredEvent;
/** A row of the event debugger: the stored event, its sync state, and its copies in the table. */
export type DebuggerEvent = StoredEvent & { copies: number };
/** A dead letter of the account (events.deadletter or crm.deadletter). */
export interface DeadLetterView {
  topic: 'events' | 'crm';
  position: string;
  code: string;
  reason: string;
  failedAt: string;
  consumer: string;
  sourceTopic: string;
  eventId: string | null;
  eventName: string | null;
  /** The gateway route that refused a Segment message (e.g. `/v1/batch`); null for the pipeline's letters. */
  route: string | null;
  valueBytes: number;
  replayedFrom: string | null;
}
/** One dead letter with its stored value: parsed JSON (`value`), else text; not shown over the size bound. */
export interface DeadLetterDetail {
  letter: DeadLetterView;
  value: unknown;
  valueText: string | null;
  valueShown: boolean;
}

/** A CRM connection as the dashboard lists it: never its secret. */
export type ConnectionView = CrmCredentialView & { usedByMapping: boolean };
/** An OAuth or JWT bearer connection's health as crm-sink's token store records it (oauth-token-state.ts). */
export type OAuthConnectionHealth = { state: 'connected'; refreshedAt?: string; expiresAt?: string } | { state: 'broken'; reason: string; since: string };
export type { ConnectionTestResult, CrmCredentialView };
