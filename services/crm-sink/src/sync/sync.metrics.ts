import { Counter, Gauge, Histogram } from 'prom-client';
import { METRIC_NAMES, type Registry } from '@ingest/platform';

export interface SyncMetrics {
  outcomes: Counter<'state'>;
  /** Skipped events by reason (no_mapping, no_rule_matched, missing_identity, identity_unresolved). */
  skipped: Counter<'reason'>;
  retries: Counter<'kind'>;
  coalesced: Counter;
  lag: Histogram;
  pausedAccounts: Gauge;
  /** Events parked, resumed from the park, or dead-lettered from it (cap or age). */
  park: Counter<'action'>;
  parkedAccounts: Gauge;
  parkedEvents: Gauge;
}

/** `suspendedAccounts`: how many accounts are suspended now (their sync is held); without it the gauge is not registered. */
export function createSyncMetrics(registry: Registry, suspendedAccounts?: () => number): SyncMetrics {
  if (suspendedAccounts) {
    new Gauge({
      name: METRIC_NAMES.crmSuspendedAccounts,
      help: 'Suspended accounts: their CRM sync is paused and their events are held in the park',
      registers: [registry],
      collect() {
        this.set(suspendedAccounts());
      },
    });
  }
  const metrics: SyncMetrics = {
    outcomes: new Counter({
      name: METRIC_NAMES.crmSyncOutcomes,
      help: 'Events by CRM sync outcome (synced, skipped, failed)',
      labelNames: ['state'],
      registers: [registry],
    }),
    skipped: new Counter({
      name: METRIC_NAMES.crmSyncSkipped,
      help: 'Events the CRM sync skipped, by reason',
      labelNames: ['reason'],
      registers: [registry],
    }),
    retries: new Counter({
      name: METRIC_NAMES.crmRetries,
      help: 'CRM calls retried, by cause (rate_limited, transient)',
      labelNames: ['kind'],
      registers: [registry],
    }),
    coalesced: new Counter({
      name: METRIC_NAMES.crmRecordsCoalesced,
      help: 'Event-rule operations folded into an upsert that another operation of the same record already needed',
      registers: [registry],
    }),
    lag: new Histogram({
      name: METRIC_NAMES.crmSyncLag,
      help: 'Seconds from the gateway accepting an event to its CRM effect being written (accept -> synced)',
      buckets: [0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600],
      registers: [registry],
    }),
    pausedAccounts: new Gauge({ name: METRIC_NAMES.crmPausedAccounts, help: 'Accounts whose CRM work waits for a Retry-After', registers: [registry] }),
    park: new Counter({
      name: METRIC_NAMES.crmParkEvents,
      help: 'Events of blocked accounts parked in Redis, resumed from there, or dead-lettered from there (cap reached, too old)',
      labelNames: ['action'],
      registers: [registry],
    }),
    parkedAccounts: new Gauge({ name: METRIC_NAMES.crmParkedAccounts, help: 'Accounts with parked events (all replicas)', registers: [registry] }),
    parkedEvents: new Gauge({
      name: METRIC_NAMES.crmParkedEvents,
      help: 'Parked events waiting for their account to recover (all replicas)',
      registers: [registry],
    }),
  };
  for (const action of ['parked', 'resumed', 'dead_lettered']) metrics.park.inc({ action }, 0);
  // Known label values start at zero, so rate() and the alerts see them from the first scrape.
  for (const state of ['synced', 'skipped', 'failed']) metrics.outcomes.inc({ state }, 0);
  for (const kind of ['rate_limited', 'transient']) metrics.retries.inc({ kind }, 0);
  return metrics;
}
