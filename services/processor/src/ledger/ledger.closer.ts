import {
  type Account,
  type AllowanceReconciler,
  type BillingLedgerRecord,
  billingLedgerKey,
  type LedgerWriter,
  PLAN_LIMITS,
  type Plan,
  type AllowancePeriod,
  allowancePeriod,
} from '@ingest/domain';
import { type Component, type Logger } from '@ingest/platform';
import type { ExactCounts } from '../allowance/exact-counts.store.js';
import { createPeriodicTask } from '../periodic.js';

export interface LedgerCloserDeps {
  counts: ExactCounts;
  allowance: AllowanceReconciler;
  /** Accounts as control.accounts holds them now. */
  readAccounts(): Promise<Map<string, Account>>;
  /** The ledger topic by key: what is closed already. */
  readLedger(): Promise<Map<string, BillingLedgerRecord>>;
  ledger: LedgerWriter;
  pipelineCaughtUp(): Promise<boolean>;
  /** One closer at a time across replicas; undefined when another holds the lease. */
  lease(periodId: string): Promise<(() => Promise<void>) | undefined>;
  logger: Logger;
  intervalMs: number;
  /** Wait this long after a month ends before closing it (late jobs, pipeline lag). Default 1 h. */
  closeDelayMs?: number;
  /**
   * An account with a bulk/CSV job of the month still unsettled is closed once the job has run,
   * or after this long past the month's end whatever the job does. Default 24 h.
   */
  pendingJobGraceMs?: number;
  now?: () => number;
}

export type CloseResult = { closed: number; deferred: number; periods: string[] } | { skipped: string };

/** How many ended months are checked each round: a processor down for a whole month still closes it. */
const MONTHS_CHECKED = 2;

/**
 * Closes each ended month in the billing ledger: one `period_closed` record per account (every
 * account that existed before the month's end, and any with usage in it), with ClickHouse's
 * exact count of the unique events it received in the month. A record is written once and
 * never again (the ledger topic is read before writing, under a lease), so later rollups,
 * schema changes or late data can never change a closed month.
 */
export function createLedgerCloser(deps: LedgerCloserDeps): Component & { runOnce(): Promise<CloseResult> } {
  const now = deps.now ?? Date.now;
  const closeDelayMs = deps.closeDelayMs ?? 3_600_000;
  const pendingJobGraceMs = deps.pendingJobGraceMs ?? 24 * 3_600_000;
  const log = deps.logger.child({ component: 'ledger-closer' });

  function endedPeriods(at: number): AllowancePeriod[] {
    const periods: AllowancePeriod[] = [];
    let start = allowancePeriod(at).start.getTime();
    for (let i = 0; i < MONTHS_CHECKED; i++) {
      const period = allowancePeriod(start - 1);
      if (at >= period.end.getTime() + closeDelayMs) periods.push(period);
      start = period.start.getTime();
    }
    return periods;
  }

  /** The plan in force when the month ended: before the first change after it, else the current one. */
  function planAtEnd(account: Account | undefined, period: AllowancePeriod, ledger: Map<string, BillingLedgerRecord>): Plan {
    const later = [...ledger.values()]
      .filter((r) => r.kind === 'plan_changed' && r.accountId === account?.id && Date.parse(r.at) >= period.end.getTime())
      .sort((a, b) => Date.parse(a.at) - Date.parse(b.at));
    return later[0]?.previousPlan ?? account?.plan ?? 'free';
  }

  async function closePeriod(period: AllowancePeriod, at: number, ledger: Map<string, BillingLedgerRecord>, accounts: Map<string, Account>) {
    const isOpen = (accountId: string) => !ledger.has(billingLedgerKey({ kind: 'period_closed', accountId, period: period.id, at: '' }));
    const existed = [...accounts.values()].filter((a) => Date.parse(a.createdAt) < period.end.getTime()).map((a) => a.id);
    const counted = await deps.allowance.accountsWithCounters(period.id);
    let exact = await deps.counts.exactByAccount(period.start.getTime(), period.end.getTime());
    const open = [...new Set([...existed, ...counted, ...exact.keys()])].filter(isOpen);
    if (open.length === 0) return { closed: 0, deferred: 0 };
    if (!(await deps.pipelineCaughtUp())) return undefined;
    // Read again now that everything received so far is stored.
    exact = await deps.counts.exactByAccount(period.start.getTime(), period.end.getTime());

    const records: BillingLedgerRecord[] = [];
    let deferred = 0;
    for (const accountId of open) {
      const pending = await deps.allowance.pendingJobs(accountId, period.id);
      if (pending.length > 0) {
        if (at < period.end.getTime() + pendingJobGraceMs) {
          deferred++;
          continue;
        }
        log.warn({ accountId, period: period.id, pendingJobs: pending.length }, 'closing a month with jobs that never settled');
      }
      const plan = planAtEnd(accounts.get(accountId), period, ledger);
      records.push({
        v: 1,
        kind: 'period_closed',
        accountId,
        period: period.id,
        at: period.end.toISOString(),
        plan,
        previousPlan: null,
        limit: PLAN_LIMITS[plan],
        eventsCharged: exact.get(accountId) ?? 0,
        overageRefused: await deps.allowance.refused(accountId, period.id),
        recordedAt: new Date(at).toISOString(),
      });
    }
    if (records.length > 0) await deps.ledger.append(records);
    return { closed: records.length, deferred };
  }

  async function runOnce(): Promise<CloseResult> {
    const at = now();
    const periods = endedPeriods(at);
    if (periods.length === 0) return { skipped: 'no month has ended long enough ago' };
    let closed = 0;
    let deferred = 0;
    const done: string[] = [];
    for (const period of periods) {
      const release = await deps.lease(period.id);
      if (!release) return { skipped: `another closer holds ${period.id}` };
      try {
        const [ledger, accounts] = await Promise.all([deps.readLedger(), deps.readAccounts()]);
        const result = await closePeriod(period, at, ledger, accounts);
        if (!result) return { skipped: 'pipeline has not caught up' };
        closed += result.closed;
        deferred += result.deferred;
        if (result.closed > 0) log.info({ period: period.id, closed: result.closed, deferred: result.deferred }, 'billing period closed');
        done.push(period.id);
      } finally {
        await release();
      }
    }
    return { closed, deferred, periods: done };
  }

  const task = createPeriodicTask({
    name: 'ledger-closer',
    intervalMs: deps.intervalMs,
    logger: log,
    run: async () => {
      const result = await runOnce();
      if ('skipped' in result) log.debug({ reason: result.skipped }, 'ledger closing skipped');
    },
  });
  return {
    ...task,
    runOnce,
  };
}
