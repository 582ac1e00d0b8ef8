import { Gauge } from 'prom-client';
import { METRIC_NAMES, type Registry } from '@ingest/platform';

/** The `kind` label: one value per state topic. */
export const CONTROL_PLANE_KINDS = ['accounts', 'api_keys', 'mappings', 'crm_credentials', 'owners', 'admin_credentials'] as const;
export type ControlPlaneKind = (typeof CONTROL_PLANE_KINDS)[number];

export interface ControlPlaneView {
  /** Records held in memory now, per kind (mappings: every stored version). */
  records(): Record<ControlPlaneKind, number>;
  /** Kafka timestamp (ms) of the newest record applied; undefined before the first one. */
  lastAppliedMs(): number | undefined;
}

/**
 * ingest_control_plane_records{kind} and ingest_control_plane_last_applied_timestamp_seconds,
 * read from the instance's state at scrape time. Every replica materialises the same topics,
 * so replicas that disagree (records, or a last-applied time behind the others') have not seen
 * the latest writes: key revocations and mapping changes have not reached them.
 */
export function registerControlPlaneMetrics(registry: Registry, view: ControlPlaneView): void {
  new Gauge<'kind'>({
    name: METRIC_NAMES.controlPlaneRecords,
    help: 'Control plane records this instance holds in memory, by kind (accounts, api_keys, mappings, crm_credentials, owners, admin_credentials)',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      const records = view.records();
      for (const kind of CONTROL_PLANE_KINDS) this.set({ kind }, records[kind]);
    },
  });
  new Gauge({
    name: METRIC_NAMES.controlPlaneLastApplied,
    help: 'Kafka timestamp (unix seconds) of the newest control plane record this instance has applied; 0 before the first',
    registers: [registry],
    collect() {
      this.set((view.lastAppliedMs() ?? 0) / 1000);
    },
  });
}
