import { DashboardSyncHealth } from '@ingest/schemas';
import { type SyncHealthStore, totalsOf } from '@ingest/domain';
import type { FastifyPluginAsync } from 'fastify';
import { dashboardOf } from './session.guard.js';
import type { RouteLimits } from './route-options.js';

const iso = (ms: number | undefined): string | null => (ms === undefined ? null : new Date(ms).toISOString());

/**
 * The signed-in owner's CRM sync health (what the crm-sink records): the current state in
 * words, the last success and failure, and synced/skipped/failed per hour over the last week.
 * Only the session's account is read: there is no account parameter to change.
 */
export function dashboardSyncHealthRoutes(deps: { store: SyncHealthStore; limits: RouteLimits; now: () => number }): FastifyPluginAsync {
  return async (app) => {
    app.get('/sync-health', { ...deps.limits.api, schema: { hide: true, response: { 200: DashboardSyncHealth } } }, async (request) => {
      const { account } = dashboardOf(request);
      const { current, hours } = await deps.store.read(account.id, deps.now());
      return {
        current: current
          ? {
              state: current.state,
              reason: current.reason ?? null,
              since: new Date(current.sinceMs).toISOString(),
              unhealthySince: iso(current.unhealthySinceMs),
              updatedAt: new Date(current.updatedAtMs).toISOString(),
              lastSuccessAt: iso(current.lastSuccessAtMs),
              lastFailureAt: iso(current.lastFailureAtMs),
            }
          : null,
        last24h: totalsOf(hours, 24),
        hours,
      };
    });
  };
}
