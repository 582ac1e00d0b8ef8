import { UsageResponse } from '@ingest/schemas';
import type { FastifyPluginAsync } from 'fastify';
import { authOf } from '../auth/auth.hook.js';
import { type Allowance, usageReport } from '@ingest/domain';
import { problemResponses } from '@ingest/http';

/** GET /v1/usage: this month's allowance of the caller's account. */
export function allowanceRoutes(deps: { allowance: Allowance }): FastifyPluginAsync {
  return async (app) => {
    app.get(
      '/usage',
      {
        config: { apiScope: 'usage:read' },
        schema: { summary: "This month's usage and allowance", tags: ['usage'], response: { 200: UsageResponse, ...problemResponses(401, 403, 429, 503) } },
      },
      async (request, reply) => {
        const { account } = authOf(request);
        const state = await deps.allowance.state(account);
        reply.allowanceState = state;
        return usageReport(account.plan, state);
      },
    );
  };
}
