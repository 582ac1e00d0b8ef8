import multipart from '@fastify/multipart';
import { JOB_CHUNK_SIZE, MAX_EVENTS_PER_BULK } from '@ingest/schemas';
import { type Account, type Allowance, isRetryable } from '@ingest/shared';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IngestMetrics } from '../events/ingest-metrics.js';
import { ProblemError } from '../http/problem.js';
import type { JobWriter } from '../jobs/job-writer.js';
import { quotaExceeded } from '../limits/quota-headers.js';
import { readCsvEvents } from './csv-reader.js';

export const MAX_CSV_BYTES = 50 * 1000 * 1000;

export interface CsvUploadDeps {
  jobs: JobWriter;
  allowance: Allowance;
  metrics: IngestMetrics;
}

/** The multipart parser with the CSV upload's limits, for the plugin scope of a CSV route. */
export async function registerCsvMultipart(app: FastifyInstance): Promise<void> {
  await app.register(multipart, {
    throwFileSizeLimit: true,
    limits: { fileSize: MAX_CSV_BYTES, files: 1, fields: 10, parts: 11, fieldSize: 1024 },
  });
}

/**
 * The streamed CSV upload shared by POST /v1/backfill/csv (API key) and the dashboard's upload
 * (session): one file part `file`, rows become job chunks in Kafka as they are read, so the file
 * is never held whole. The job is sealed (queued) only when the whole file was read and fits the
 * allowance; any failure on the way aborts it, so its chunks are dropped by the job runner and
 * nothing of a refused upload is processed. `route` labels the metrics.
 */
export async function handleCsvUpload(
  request: FastifyRequest,
  reply: FastifyReply,
  account: Account,
  deps: CsvUploadDeps,
  route: string,
): Promise<FastifyReply> {
  if (!request.isMultipart()) {
    throw new ProblemError('unsupportedMediaType', 'Send multipart/form-data with one file part named "file".');
  }
  const before = await deps.allowance.state(account);
  if (before.remaining === 0) {
    deps.metrics.allowanceRefusals.inc({ route });
    throw quotaExceeded(before, `The monthly allowance of ${before.limit} events is used up; nothing was queued.`);
  }

  // Errors of the multipart parser itself (no boundary, a body that ends early) are the
  // caller's malformed upload, not ours: they are remembered and answered with 400.
  let part: Awaited<ReturnType<typeof request.file>>;
  try {
    part = await request.file();
  } catch (err) {
    throw malformedUpload(err);
  }
  let streamError: unknown;
  part?.file.on('error', (err) => {
    streamError = err;
  });
  if (!part)
    throw new ProblemError('validation', 'The upload has no file part.', {
      errors: [{ field: 'file', code: 'required', message: 'send the CSV as the file part "file"' }],
    });
  if (part.fieldname !== 'file') {
    throw new ProblemError('validation', `The file part must be named "file", not "${part.fieldname.slice(0, 100)}".`, {
      errors: [{ field: part.fieldname.slice(0, 100), code: 'unexpected_part', message: 'the file part must be named "file"' }],
    });
  }

  const job = deps.jobs.open(account, 'csv');
  try {
    const result = await readCsvEvents(part.file, {
      accountId: account.id,
      maxRows: MAX_EVENTS_PER_BULK,
      chunkSize: JOB_CHUNK_SIZE,
      onChunk: (items) => job.writeChunk(items),
    });
    if (part.file.truncated) throw new ProblemError('payloadTooLarge', `The file is larger than ${MAX_CSV_BYTES} bytes.`);

    const { granted, state } = await deps.allowance.reserveCount(account, result.totalRows, job.jobId);
    reply.quotaState = state;
    if (!granted) {
      deps.metrics.allowanceRefusals.inc({ route });
      throw quotaExceeded(state, `The file has ${result.totalRows} rows but only ${state.remaining} events remain this month; nothing was queued.`);
    }
    try {
      const status = await job.seal(result.totalRows);
      deps.metrics.jobsCreated.inc({ source: 'csv' });
      request.log.info({ accountId: account.id, jobId: job.jobId, totalEvents: result.totalRows }, 'csv job queued');
      return reply.code(202).send({ jobId: status.jobId, totalEvents: status.totalEvents, status: 'queued' });
    } catch (err) {
      await deps.allowance
        .release(account, { count: result.totalRows, jobId: job.jobId })
        .catch((e: unknown) => request.log.error({ err: e }, 'allowance release failed'));
      throw err;
    }
  } catch (caught) {
    // At the size limit the file stream simply ends early (truncated): whatever the reader
    // made of the cut-off file, the answer is 413.
    const err = part.file.truncated
      ? new ProblemError('payloadTooLarge', `The file is larger than ${MAX_CSV_BYTES} bytes.`)
      : caught === streamError && !(caught instanceof ProblemError) && !isFastifyLimitError(caught)
        ? malformedUpload(caught)
        : caught;
    await job.abort(err instanceof ProblemError ? err.kind : 'upload_failed').catch((e: unknown) => {
      request.log.warn({ err: e, jobId: job.jobId }, 'could not write the abort marker; the runner drops unsealed chunks');
    });
    if (!(err instanceof ProblemError) && isRetryable(err) && (err as { code?: unknown }).code !== 'kafka_outcome_unknown') {
      throw new ProblemError('unavailable', 'The upload could not be stored right now; nothing was queued. Retry later.', {
        headers: { 'retry-after': '5' },
        cause: err,
      });
    }
    throw err;
  }
}

function malformedUpload(cause: unknown): Error {
  if (cause instanceof Error && (cause instanceof ProblemError || isFastifyLimitError(cause))) return cause;
  return new ProblemError('validation', 'The multipart body is malformed; send one file part named "file".', {
    errors: [{ field: 'file', code: 'malformed_multipart', message: 'the multipart body could not be read' }],
    cause,
  });
}

/** @fastify/multipart's own limit errors carry codes the error handler maps (413, ...). */
function isFastifyLimitError(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('FST_');
}
