// The dashboard API's shapes, derived from the JSON Schemas in schemas/ (type-only import:
// nothing of TypeBox reaches the bundle).
import type { ApiKeyView, BulkJobReceipt, DashboardUsage, JobStatus, SessionView } from '@ingest/schemas';

export type { DashboardUsage, SessionView };
export type KeyView = ApiKeyView;
export interface CreatedApiKeyView {
  apiKey: string;
  key: KeyView;
}
export type JobView = JobStatus;
export type JobReceipt = BulkJobReceipt;
