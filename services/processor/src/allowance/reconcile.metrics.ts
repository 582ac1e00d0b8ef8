import { METRIC_NAMES, type Registry } from '@ingest/platform';
import { Counter, Gauge } from 'prom-client';

/**
 * What a reconciliation round came to: `reconciled` (counters set), `nothing_to_do` (no complete
 * hour in the month yet), `pipeline_behind` (skipped: events received before the hour are not
 * all stored yet), `failed` (ClickHouse, Redis or Kafka did not answer; retried next round).
 */
export const RECONCILE_OUTCOMES = ['reconciled', 'nothing_to_do', 'pipeline_behind', 'failed'] as const;
export type ReconcileOutcome = (typeof RECONCILE_OUTCOMES)[number];

export interface ReconcileMetrics {
  runs: Counter<'outcome'>;
  accounts: Counter;
  /** Unix seconds of the last round that reconciled or had nothing to do; the start time before that. */
  lastSuccess: Gauge;
}

export function createReconcileMetrics(registry: Registry): ReconcileMetrics {
  const runs = new Counter<'outcome'>({
    name: METRIC_NAMES.usageReconcileRuns,
    help: 'Usage reconciliation rounds by outcome (reconciled, nothing_to_do, pipeline_behind, failed)',
    labelNames: ['outcome'],
    registers: [registry],
  });
  for (const outcome of RECONCILE_OUTCOMES) runs.inc({ outcome }, 0);
  return {
    runs,
    accounts: new Counter({
      name: METRIC_NAMES.usageReconciledAccounts,
      help: 'Allowance counters set to the exact usage by reconciliation rounds (one per account per round)',
      registers: [registry],
    }),
    lastSuccess: new Gauge({
      name: METRIC_NAMES.usageReconcileLastSuccess,
      help: 'Unix time of the last reconciliation round that reconciled or had nothing to do (the reconciler start time until then)',
      registers: [registry],
    }),
  };
}
