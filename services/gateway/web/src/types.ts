// The dashboard API's shapes, derived from the JSON Schemas in schemas/ (type-only import:
// nothing of TypeBox reaches the bundle).
import type { ApiKeyView, DashboardUsage, SessionView } from '@ingest/schemas';

export type { DashboardUsage, SessionView };
export type KeyView = ApiKeyView;
export interface CreatedApiKeyView {
  apiKey: string;
  key: KeyView;
}
