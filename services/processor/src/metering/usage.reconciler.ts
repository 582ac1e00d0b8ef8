import {
  type AllowanceReconciler,
  type ClickHouse,
  type Component,
  hourOf,
  type KafkaClient,
  type Logger,
  quotaPeriod,
  type Registry,
  sql,
} from '@ingest/shared';
import { type PipelineStage, waitForPipeline } from './pipeline-progress.js';
import { createUsageReconcilerMetrics, type ReconcileOutcome } from './usage.metrics.js';

export interface UsageReconcilerDeps {
  kafka: KafkaClient;
  ch: ClickHouse;
  allowance: AllowanceReconciler;
  /** In pipeline order: the job runner, dedupe, storage. */
  stages: PipelineStage[];
  logger: Logger;
  metrics: Registry;
  intervalMs: number;
  /** How long after an hour starts before it counts as "before T" (gateway sends take ≤ 5 s). */
  settleMs?: number;
  catchUpTimeoutMs?: number;
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
export function createUsageReconciler(deps: UsageReconcilerDeps): Component & { runOnce(): Promise<ReconcileResult> } {
  const now = deps.now ?? Date.now;
  const settleMs = deps.settleMs ?? 30_000;
  const log = deps.logger.child({ component: 'usage-reconciler' });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();
  const metrics = createUsageReconcilerMetrics(deps.metrics);
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
    const period = quotaPeriod(at);
    let fromMs = Math.floor(at / 3_600_000) * 3_600_000;
    if (at - fromMs < settleMs) fromMs -= 3_600_000;
    if (fromMs <= period.start.getTime()) return { skipped: 'no complete hour in this month yet', outcome: 'nothing_to_do' };

    if (!(await waitForPipeline(deps.kafka, deps.stages, { timeoutMs: deps.catchUpTimeoutMs ?? 30_000 }))) {
      return { skipped: 'pipeline has not caught up', outcome: 'pipeline_behind' };
    }
    const rows = await deps.ch.query<{ account_id: string; n: string }>(
      sql`SELECT account_id, uniqExactMerge(events) AS n FROM usage_hourly WHERE hour >= ${period.start} AND hour < ${new Date(fromMs)} GROUP BY account_id`,
    );
    const exact = new Map(rows.map((r) => [r.account_id, Number(r.n)]));
    const accounts = new Set([...exact.keys(), ...(await deps.allowance.accountsWithCounters(period.id))]);
    const fromHour = hourOf(fromMs);
    for (const accountId of accounts) {
      await deps.allowance.reconcile(accountId, period.id, exact.get(accountId) ?? 0, fromHour);
    }
    log.info({ accounts: accounts.size, from: new Date(fromMs).toISOString() }, 'allowance counters reconciled');
    return { reconciled: accounts.size, fromHour };
  }

  function schedule(): void {
    timer = setTimeout(() => {
      running = runOnce()
        .then((result) => {
          if ('skipped' in result) log.debug({ reason: result.skipped }, 'reconciliation skipped');
        })
        .catch((err: unknown) => {
          log.warn({ err }, 'reconciliation failed; retrying next round');
        })
        .finally(() => {
          if (timer) schedule();
        });
    }, deps.intervalMs);
  }

  return {
    name: 'usage-reconciler',
    async start() {
      schedule();
    },
    async stop() {
      clearTimeout(timer);
      timer = undefined;
      await running;
    },
    // A failed round is retried next time; it does not make the processor unready.
    healthy: () => true,
    runOnce,
  };
}
