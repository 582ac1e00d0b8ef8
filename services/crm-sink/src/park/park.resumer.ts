import { type Component, type Logger } from '@ingest/platform';
import type { SyncMetrics } from '../sync/sync.metrics.js';
import type { ParkingSettings } from './park.writer.js';
import type { Lease } from './park.store.js';

/**
 * Every replica looks for parked accounts that are due (every CRM_PARK_POLL_MS) and resumes
 * them, each under its lease, so one replica at a time applies an account's parked events, in
 * order. A resume that meets the account blocked again reschedules it with a longer delay.
 * Also keeps the parked-accounts and parked-events gauges, which count all replicas' work.
 */
export interface ParkResumerDeps {
  resumeParked(accountId: string, lease: Lease): Promise<void>;
  settings: ParkingSettings;
  metrics: SyncMetrics;
  logger: Logger;
  /** Accounts resumed at once by one replica. */
  concurrency?: number;
}

export function createParkResumer(deps: ParkResumerDeps): Component {
  const log = deps.logger.child({ component: 'crm-park-resumer' });
  const { store } = deps.settings;
  const concurrency = deps.concurrency ?? 4;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;
  let lastTickOk = true;

  async function resume(accountId: string): Promise<void> {
    const lease = await store.lease(accountId, deps.settings.leaseMs);
    if (!lease) return;
    try {
      await deps.resumeParked(accountId, lease);
    } finally {
      await lease.release().catch(() => undefined);
    }
  }

  async function tick(): Promise<void> {
    const totals = await store.totals();
    deps.metrics.parkedAccounts.set(totals.accounts);
    deps.metrics.parkedEvents.set(totals.events);
    const due = await store.due(Date.now(), concurrency * 4);
    for (let i = 0; i < due.length && !stopped; i += concurrency) {
      const results = await Promise.allSettled(due.slice(i, i + concurrency).map(resume));
      for (const r of results) if (r.status === 'rejected') log.error({ err: r.reason }, 'resuming a parked account failed; it stays due');
    }
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick()
        .then(() => {
          lastTickOk = true;
        })
        .catch((err: unknown) => {
          lastTickOk = false;
          log.error({ err }, 'looking for parked CRM accounts failed');
        })
        .finally(schedule);
    }, deps.settings.pollMs);
  }

  return {
    name: 'crm-park-resumer',
    async start() {
      stopped = false;
      schedule();
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
    healthy: () => lastTickOk,
  };
}
