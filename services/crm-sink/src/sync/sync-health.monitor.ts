import { Gauge } from 'prom-client';
import { type Component, type Logger, METRIC_NAMES, type Registry } from '@ingest/platform';
import type { SyncHealthStore } from '@ingest/domain';

/**
 * The accounts' sync health as metrics, for operators and the alert IngestCrmSyncAccountStuck
 * (docs/operations.md, "CRM sync health"). Every replica reads the same Redis state every
 * `pollMs`, so every replica exports the same numbers (alerts take the max). Cardinality is
 * bounded on purpose: the counts carry no account label, and the per-account gauge lists only
 * the `maxAccounts` accounts that have been unhealthy longest — healthy accounts never appear.
 */
export interface SyncHealthMonitorSettings {
  /** An account parked, failing or with a broken credential this long counts as stuck (the alert's duration). */
  alertAfterMs: number;
  /** Accounts listed with their own label, longest unhealthy first. */
  maxAccounts: number;
  pollMs: number;
}

export const DEFAULT_SYNC_HEALTH_MONITOR: SyncHealthMonitorSettings = { alertAfterMs: 30 * 60_000, maxAccounts: 20, pollMs: 15_000 };

export function createSyncHealthMonitor(deps: {
  store: SyncHealthStore;
  settings: SyncHealthMonitorSettings;
  metrics: Registry;
  logger: Logger;
  now?: () => number;
}): Component & { tick(): Promise<void> } {
  const now = deps.now ?? Date.now;
  const log = deps.logger.child({ component: 'crm-sync-health-monitor' });
  const unhealthy = new Gauge({
    name: METRIC_NAMES.crmSyncUnhealthyAccounts,
    help: 'Accounts whose CRM sync is not running (parked, failing, credential broken), all replicas',
    registers: [deps.metrics],
  });
  const stuck = new Gauge({
    name: METRIC_NAMES.crmSyncStuckAccounts,
    help: 'Accounts whose CRM sync has not been running for at least CRM_HEALTH_ALERT_AFTER_MS',
    registers: [deps.metrics],
  });
  const seconds = new Gauge({
    name: METRIC_NAMES.crmSyncUnhealthySeconds,
    help: 'Seconds since the account last stopped running, for the CRM_HEALTH_METRICS_MAX_ACCOUNTS accounts unhealthy longest',
    labelNames: ['account', 'state'],
    registers: [deps.metrics],
  });
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = true;

  async function tick(): Promise<void> {
    const at = now();
    const found = await deps.store.unhealthy(at, { limit: deps.settings.maxAccounts, stuckAfterMs: deps.settings.alertAfterMs });
    unhealthy.set(found.total);
    stuck.set(found.stuck);
    // Reset, then set: an account that recovered leaves the list (and the series ends).
    seconds.reset();
    for (const a of found.oldest) seconds.set({ account: a.accountId, state: a.state }, Math.max(0, (at - a.unhealthySinceMs) / 1000));
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick()
        .catch((err: unknown) => log.warn({ err: err instanceof Error ? err.message : String(err) }, 'reading CRM sync health failed; metrics kept'))
        .finally(schedule);
    }, deps.settings.pollMs);
  }

  return {
    name: 'crm-sync-health-monitor',
    tick,
    async start() {
      stopped = false;
      await tick().catch((err: unknown) => log.warn({ err: err instanceof Error ? err.message : String(err) }, 'reading CRM sync health failed'));
      schedule();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
    healthy: () => true,
  };
}
