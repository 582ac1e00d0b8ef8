import { DashboardUsage } from '@ingest/schemas';
import { type Allowance, usageReport } from '@ingest/domain';
import type { ClickHouse } from '@ingest/platform';
import type { FastifyPluginAsync } from 'fastify';
import { dashboardOf } from './session.guard.js';
import type { RouteLimits } from './route-options.js';
import { readAllowanceHistory } from './allowance-history.store.js';

/** This month's allowance (as GET /v1/usage) and the daily history of the last 90 days. */
export function dashboardAllowanceRoutes(deps: { allowance: Allowance; ch: ClickHouse; limits: RouteLimits; now: () => number }): FastifyPluginAsync {
  return async (app) => {
    app.get('/usage', { ...deps.limits.api, schema: { hide: true, response: { 200: DashboardUsage } } }, async (request) => {
      const { account } = dashboardOf(request);
      const [state, daily] = await Promise.all([deps.allowance.state(account), readAllowanceHistory(deps.ch, account.id, deps.now())]);
      return { ...usageReport(account.plan, state), daily };
    });
  };
}
