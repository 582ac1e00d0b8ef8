import { type AllowanceReconciler, hourOf, allowancePeriod } from '@ingest/domain';
import { type Component, type Logger, type Registry } from '@ingest/platform';
import { createPeriodicTask } from '../periodic.js';
import type { ExactCounts } from './exact-counts.store.js';
import { createReconcileMetrics, type ReconcileOutcome } from './reconcile.metrics.js';

export interface AllowanceReconcileTaskDeps {
  counts: ExactCounts;
  allowance: AllowanceReconciler;
  /**
   * True once everything written to the pipeline so far has been stored (waitForPipeline on
   * the dedupe and storage groups); false when it did not catch up in time.
   */
  pipelineCaughtUp(): Promise<boolean>;
  logger: Logger;
  metrics: Registry;
  intervalMs: number;
  /** How long after an hour starts before it counts as "before T" (gateway sends take ≤ 5 s). */
  settleMs?: number;
  now?: () => number;
}

export type ReconcileResult = { reconciled: number; fromHour: number } | { skipped: string; outcome: Exclude<ReconcileOutcome, 'reconciled' | 'failed'> };

/**
 * Makes the gateway's allowance counters exact. Usage is the number of unique events received
 * in the month, which ClickHouse knows exactly (usage_hourly, uniqExact states). Once every
 * event received before hour T has been stored, each account's counter becomes
 *   exact unique events received in [month start, T) + what the gateway counted from T on.
 * Counts of later hours stay as the gateway made them until a later round.
 */
export function createAllowanceReconcileTask(deps: AllowanceReconcileTaskDeps): Component & { runOnce(): Promise<ReconcileResult> } {
  const now = deps.now ?? Date.now;
  const settleMs = deps.settleMs ?? 30_000;
  // 'usage-reconciler' is what operators see (log component, the task's name in health and
  // logs), like the ingest_usage_reconcile_* metrics: kept when the code became "allowance".
  const log = deps.logger.child({ component: 'usage-reconciler' });
  const metrics = createReconcileMetrics(deps.metrics);
  // Until a first round ends, staleness counts from the start (an alert must not fire at boot).
  metrics.lastSuccess.set(now() / 1000);

  async function runOnce(): Promise<ReconcileResult> {
    let result: ReconcileResult;
    try {
      result = await reconcile();
    } catch (err) {
      metrics.runs.inc({ outcome: 'failed' });
      throw err;
    }
    if ('skipped' in result) {
      metrics.runs.inc({ outcome: result.outcome });
      if (result.outcome === 'nothing_to_do') metrics.lastSuccess.set(now() / 1000);
    } else {
      metrics.runs.inc({ outcome: 'reconciled' });
      metrics.accounts.inc(result.reconciled);
      metrics.lastSuccess.set(now() / 1000);
    }
    return result;
  }

  async function reconcile(): Promise<ReconcileResult> {
    const at = now();
    const period = allowancePeriod(at);
    let fromMs = Math.floor(at / 3_600_000) * 3_600_000;
    if (at - fromMs < settleMs) fromMs -= 3_600_000;
    // Ids no longer looked up are deleted whatever else this round does (memory, not counts).
    const swept = await deps.allowance.sweepSeen(at);
    if (swept > 0) log.debug({ swept }, 'forgot seen-id buckets that are no longer looked up');
    if (fromMs <= period.start.getTime()) return { skipped: 'no complete hour in this month yet', outcome: 'nothing_to_do' };

    if (!(await deps.pipelineCaughtUp())) {
      return { skipped: 'pipeline has not caught up', outcome: 'pipeline_behind' };
    }
    const exact = await deps.counts.exactByAccount(period.start.getTime(), fromMs);
    const accounts = new Set([...exact.keys(), ...(await deps.allowance.accountsWithCounters(period.id))]);
    const fromHour = hourOf(fromMs);
    for (const accountId of accounts) {
      await deps.allowance.reconcile(accountId, period.id, exact.get(accountId) ?? 0, fromHour);
    }
    log.info({ accounts: accounts.size, from: new Date(fromMs).toISOString() }, 'allowance counters reconciled');
    return { reconciled: accounts.size, fromHour };
  }

  const task = createPeriodicTask({
    name: 'usage-reconciler',
    intervalMs: deps.intervalMs,
    logger: log,
    run: async () => {
      const result = await runOnce();
      if ('skipped' in result) log.debug({ reason: result.skipped }, 'reconciliation skipped');
    },
  });
  return {
    ...task,
    runOnce,
  };
}
