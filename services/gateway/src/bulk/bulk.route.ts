import { BulkEventsEnvelope, BulkEventsRequest, BulkJobReceipt, type JobChunkItem } from '@ingest/schemas';
import { type Allowance, AppError, isRetryable } from '@ingest/shared';
import type { FastifyPluginAsync } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import { authOf } from '../auth/auth.hook.js';
import type { IngestMetrics } from '../events/ingest-metrics.js';
import { envelopeValidator } from '../http/envelope-validator.js';
import { ProblemError, problemResponses } from '../http/problem.js';
import type { JobWriter } from '../jobs/job-writer.js';
import { quotaExceeded } from '../limits/quota-headers.js';

export interface BulkRouteDeps {
  jobs: JobWriter;
  allowance: Allowance;
  metrics: IngestMetrics;
}

/**
 * POST /v1/events/bulk: up to 10,000 events as a background job. The envelope is checked here;
 * each event is validated by the job runner with the same rules as POST /v1/events. Events
 * without an eventId get one now, so that a redelivered chunk can never mint a second id.
 */
export function bulkRoutes(deps: BulkRouteDeps): FastifyPluginAsync {
  return async (app) => {
    app.post<{ Body: { events: unknown[] } }>(
      '/events/bulk',
      {
        bodyLimit: 16 * 1024 * 1024,
        validatorCompiler: envelopeValidator(BulkEventsEnvelope),
        schema: {
          summary: 'Queue up to 10,000 events as a background job',
          tags: ['jobs'],
          body: BulkEventsRequest,
          response: { 202: BulkJobReceipt, ...problemResponses(400, 401, 402, 413, 415, 429, 503, 504) },
        },
      },
      async (request, reply) => {
        const { account } = authOf(request);
        const events = request.body.events;
        const jobId = uuidv7();
        const { granted, state } = await deps.allowance.reserveCount(account, events.length, jobId);
        reply.quotaState = state;
        if (!granted) {
          deps.metrics.allowanceRefusals.inc({ route: '/v1/events/bulk' });
          throw quotaExceeded(state, `The job has ${events.length} events but only ${state.remaining} remain this month; nothing was queued.`);
        }
        const items: JobChunkItem[] = events.map((event, index) => ({ index, event: withEventId(event) }));
        try {
          const status = await deps.jobs.writeWhole(account, 'bulk', items, jobId);
          deps.metrics.jobsCreated.inc({ source: 'bulk' });
          request.log.info({ accountId: account.id, jobId: status.jobId, totalEvents: status.totalEvents }, 'bulk job queued');
          return reply.code(202).send({ jobId: status.jobId, totalEvents: status.totalEvents, status: 'queued' });
        } catch (err) {
          await deps.allowance
            .release(account, { count: events.length, jobId })
            .catch((e: unknown) => request.log.error({ err: e }, 'allowance release failed'));
          // The seal may have landed: the job may run; its id says where to look.
          if (err instanceof AppError && err.code === 'kafka_outcome_unknown') {
            throw new ProblemError('outcomeUnknown', 'Kafka did not answer in time; the job may have been queued. Check GET /v1/jobs/{jobId}.', {
              extensions: { jobId },
              cause: err,
            });
          }
          if (isRetryable(err)) {
            throw new ProblemError('unavailable', 'The job could not be queued right now; nothing was queued. Retry later.', {
              headers: { 'retry-after': '5' },
              cause: err,
            });
          }
          throw err;
        }
      },
    );
  };
}

function withEventId(event: unknown): unknown {
  if (typeof event !== 'object' || event === null || Array.isArray(event) || 'eventId' in event) return event;
  return { ...event, eventId: uuidv7() };
}
