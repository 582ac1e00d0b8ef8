import { Counter, Gauge } from 'prom-client';
import { METRIC_NAMES, type Registry } from '@ingest/platform';

export interface OAuthMetrics {
  /** outcome: refreshed (this replica got a new token), reused (another replica had), failed (server unavailable), refused, broken. */
  refreshes: Counter<'crm' | 'trigger' | 'outcome'>;
  revocations: Counter<'outcome'>;
}

export function createOAuthMetrics(registry: Registry, brokenCredentials: () => number): OAuthMetrics {
  new Gauge({
    name: METRIC_NAMES.crmCredentialsBroken,
    help: 'OAuth credentials this replica found broken (refresh refused for good): their accounts are parked until the owner connects again',
    registers: [registry],
    collect() {
      this.set(brokenCredentials());
    },
  });
  return {
    refreshes: new Counter({
      name: METRIC_NAMES.crmOAuthRefreshes,
      help: 'OAuth access token refreshes by CRM, trigger (expiry, unauthorized) and outcome',
      labelNames: ['crm', 'trigger', 'outcome'],
      registers: [registry],
    }),
    revocations: new Counter({
      name: METRIC_NAMES.crmOAuthRevocations,
      help: 'Grants revoked at the CRM after a disconnect, by outcome (revoked, gone, failed, dropped)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
  };
}
