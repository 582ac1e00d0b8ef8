import { BulkEventsEnvelope, BulkEventsRequest, BulkJobReceipt, type JobChunkItem } from '@ingest/schemas';
import { type Allowance } from '@ingest/domain';
import { AppError, isRetryable } from '@ingest/platform';
import type { FastifyPluginAsync } from 'fastify';
import { v7 as uuidv7 } from 'uuid';
import {
  bodyFingerprint,
  IDEMPOTENCY_HEADER,
  idempotencyKeyOf,
  type IdempotencyStore,
  type IngestMetrics,
  type JobWriter,
  ProblemError,
  problemResponses,
  allowanceExhausted,
  refusedClaim,
  replayed,
  type UploadSlotHooks,
} from '@ingest/http';
import { authOf } from '../auth/auth.hook.js';
import { envelopeValidator } from '../http/envelope-validator.js';
import { idempotencyHeaderSchema } from '../jobs/idempotency.schema.js';

export interface BulkRouteDeps {
  jobs: JobWriter;
  allowance: Allowance;
  idempotency: IdempotencyStore;
  metrics: IngestMetrics;
  /** Taken before the body (up to 16 MiB) is read. */
  uploadSlots: UploadSlotHooks;
}

/**
 * POST /v1/events/bulk: up to 10,000 events as a background job. The envelope is checked here;
 * each event is validated by the job runner with the same rules as POST /v1/events. Events
 * without an eventId get one now, so that a redelivered chunk can never mint a second id.
 * Like a CSV upload, a job counts as one request on the account's ceilings, not by its events
 * (no `countsEvents`): jobs are paced by upload slots, bytes and the allowance (docs/limits.md).
 *
 * Order of effects: chunks are written, then the job's events are reserved against the
 * allowance, then the job is sealed (queued). A reservation therefore always has chunks in
 * Kafka behind it: if this gateway dies before the seal, the job runner drops the unsealed job
 * and gives its reservation back. A job is charged what it accepted once it has run.
 */
export function bulkRoutes(deps: BulkRouteDeps): FastifyPluginAsync {
  return async (app) => {
    app.post<{ Body: { events: unknown[] } }>(
      '/events/bulk',
      {
        ...deps.uploadSlots,
        bodyLimit: 16 * 1024 * 1024,
        // Never publishable keys: a copied browser key must not start jobs (docs/security.md).
        config: { apiScope: 'events:write' },
        validatorCompiler: envelopeValidator(BulkEventsEnvelope),
        schema: {
          summary: 'Queue up to 10,000 events as a background job',
          tags: ['jobs'],
          headers: idempotencyHeaderSchema,
          body: BulkEventsRequest,
          response: { 202: BulkJobReceipt, ...problemResponses(400, 401, 402, 403, 409, 413, 415, 422, 429, 503, 504) },
        },
      },
      async (request, reply) => {
        const { account } = authOf(request);
        const events = request.body.events;
        const key = idempotencyKeyOf(request);
        if (key !== undefined) {
          const claim = await deps.idempotency.claim(account.id, key, bodyFingerprint(JSON.stringify(request.body)));
          if (claim.kind === 'replay') return replayed(reply, claim.receipt);
          if (claim.kind !== 'claimed') throw refusedClaim(claim);
        }
        try {
          const receipt = await createJob(events);
          if (key !== undefined) await deps.idempotency.complete(account.id, key, receipt);
          return reply.code(202).send(receipt);
        } catch (err) {
          if (key !== undefined) {
            // A job that may be queued keeps its key: a retry with it answers that job's id
            // rather than queueing a copy. Any other failure queued nothing and frees the key.
            const settled = outcomeUnknownJob(err);
            const keep = settled === undefined ? deps.idempotency.release(account.id, key) : deps.idempotency.complete(account.id, key, settled);
            await keep.catch((e: unknown) => request.log.warn({ err: e }, `${IDEMPOTENCY_HEADER} update failed`));
          }
          throw err;
        }

        async function createJob(items: unknown[]): Promise<BulkJobReceipt> {
          // A cheap early answer; the reservation after the write is the one that counts.
          const before = await deps.allowance.state(account);
          if (before.remaining < items.length) throw refused(before, items.length);

          const job = deps.jobs.open(account, 'bulk');
          let reserved = false;
          try {
            await job.writeChunk(items.map((event, index): JobChunkItem => ({ index, event: withEventId(event) })));
            const { granted, state } = await deps.allowance.reserveJob(account, job.jobId, items.length, job.receivedAtMs);
            reply.allowanceState = state;
            if (!granted) throw refused(state, items.length);
            reserved = true;
            const status = await job.seal(items.length);
            deps.metrics.jobsCreated.inc({ source: 'bulk' });
            request.log.info({ accountId: account.id, jobId: status.jobId, totalEvents: status.totalEvents }, 'bulk job queued');
            return { jobId: status.jobId, totalEvents: status.totalEvents, status: 'queued' };
          } catch (err) {
            // The seal may have landed: the job may run, so it is neither aborted nor given back
            // (the runner settles it either way: it runs, or it is dropped unsealed and settled
            // at zero). The answer names the job so the caller can look.
            if (reserved && err instanceof AppError && err.code === 'kafka_outcome_unknown') {
              throw new ProblemError('outcomeUnknown', 'Kafka did not answer in time; the job may have been queued. Check GET /v1/jobs/{jobId}.', {
                extensions: { jobId: job.jobId, totalEvents: items.length },
                cause: err,
              });
            }
            await job.abort(err instanceof ProblemError ? err.kind : 'write_failed').catch((e: unknown) => {
              request.log.warn({ err: e, jobId: job.jobId }, 'could not write the abort marker; the runner drops unsealed chunks');
            });
            if (reserved) {
              await deps.allowance
                .settleJob({ accountId: account.id, jobId: job.jobId, receivedAtMs: job.receivedAtMs, accepted: 0 })
                .catch((e: unknown) => request.log.error({ err: e, jobId: job.jobId }, 'allowance release failed; the job runner releases it'));
            }
            if (!(err instanceof ProblemError) && isRetryable(err)) {
              throw new ProblemError('unavailable', 'The job could not be queued right now; nothing was queued. Retry later.', {
                headers: { 'retry-after': '5' },
                cause: err,
              });
            }
            throw err;
          }
        }

        function refused(state: Parameters<typeof allowanceExhausted>[0], count: number): ProblemError {
          reply.allowanceState = state;
          deps.metrics.allowanceRefusals.inc({ route: '/v1/events/bulk' });
          return allowanceExhausted(state, `The job has ${count} events but only ${state.remaining} remain this month; nothing was queued.`);
        }
      },
    );
  };
}

/** The receipt a job of unknown outcome keeps under its Idempotency-Key, if `err` is one. */
function outcomeUnknownJob(err: unknown): BulkJobReceipt | undefined {
  if (!(err instanceof ProblemError) || err.kind !== 'outcomeUnknown') return undefined;
  const jobId = err.extensions['jobId'];
  const totalEvents = err.extensions['totalEvents'];
  return typeof jobId === 'string' && typeof totalEvents === 'number' ? { jobId, totalEvents, status: 'queued' } : undefined;
}

function withEventId(event: unknown): unknown {
  if (typeof event !== 'object' || event === null || Array.isArray(event) || 'eventId' in event) return event;
  return { ...event, eventId: uuidv7() };
}
