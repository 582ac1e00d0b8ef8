import { BulkJobReceipt, JobStatus } from '@ingest/schemas';
import type { AccountJobsReader, JobStatusStore } from '@ingest/domain';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { type CsvUploadDeps, handleCsvUpload, ProblemError, registerCsvMultipart } from '@ingest/http';
import { dashboardOf } from './session.guard.js';
import type { RouteLimits } from './route-options.js';

const LIST_LIMIT = 50;

export interface JobsRoutesDeps extends CsvUploadDeps {
  statusStore: JobStatusStore & AccountJobsReader;
  limits: RouteLimits;
}

/**
 * The account's bulk and CSV jobs (newest first; the page polls while any is running) and the
 * dashboard's CSV upload, which is the same streamed ingest as POST /v1/backfill/csv.
 */
export function dashboardJobsRoutes(deps: JobsRoutesDeps): FastifyPluginAsync {
  return async (app) => {
    await registerCsvMultipart(app);

    app.get('/jobs', { ...deps.limits.api, schema: { hide: true, response: { 200: Type.Object({ jobs: Type.Array(JobStatus) }) } } }, async (request) => {
      const { account } = dashboardOf(request);
      return { jobs: await deps.statusStore.listForAccount(account.id, LIST_LIMIT) };
    });

    app.get<{ Params: { jobId: string } }>(
      '/jobs/:jobId',
      {
        ...deps.limits.api,
        schema: { hide: true, params: Type.Object({ jobId: Type.String({ minLength: 1, maxLength: 64 }) }), response: { 200: JobStatus } },
      },
      async (request) => {
        const { account } = dashboardOf(request);
        const status = await deps.statusStore.get(request.params.jobId);
        if (!status || status.accountId !== account.id) throw new ProblemError('notFound', `No job ${request.params.jobId} in this account.`);
        return status;
      },
    );

    app.post(
      '/jobs/csv',
      { ...deps.limits.api, ...deps.uploadSlots, validatorCompiler: () => () => true, schema: { hide: true, response: { 202: BulkJobReceipt } } },
      async (request, reply) => handleCsvUpload(request, reply, dashboardOf(request).account, deps, '/dashboard/api/jobs/csv'),
    );
  };
}
