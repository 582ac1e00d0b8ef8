import { JobStatus } from '@ingest/schemas';
import type { JobStatusStore } from '@ingest/domain';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { ProblemError, problemResponses } from '@ingest/http';
import { authOf } from '../auth/auth.hook.js';

/** GET /v1/jobs/{jobId}: a job of the caller's own account; any other id is simply not found. */
export function jobsRoutes(deps: { statusStore: JobStatusStore }): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Params: { jobId: string } }>(
      '/jobs/:jobId',
      {
        config: { apiScope: 'events:write' },
        schema: {
          summary: 'Progress of a bulk or CSV job',
          tags: ['jobs'],
          params: Type.Object({ jobId: Type.String({ minLength: 1, maxLength: 64 }) }),
          response: { 200: JobStatus, ...problemResponses(400, 401, 403, 404, 429, 503) },
        },
      },
      async (request) => {
        const { account } = authOf(request);
        const status = await deps.statusStore.get(request.params.jobId);
        // Same answer for "no such job" and "another account's job": ids are not probeable.
        if (!status || status.accountId !== account.id) throw new ProblemError('notFound', `No job ${request.params.jobId} in this account.`);
        return status;
      },
    );
  };
}
