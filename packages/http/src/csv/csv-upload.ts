import { createHash } from 'node:crypto';
import multipart from '@fastify/multipart';
import { JOB_CHUNK_SIZE, MAX_EVENTS_PER_BULK, type BulkJobReceipt } from '@ingest/schemas';
import { type Account, type Allowance } from '@ingest/domain';
import { AppError, isRetryable } from '@ingest/platform';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { IngestMetrics } from '../events/ingest.metrics.js';
import { BoundedDecoder } from '../http/content-encoding.js';
import { ProblemError } from '../http/problem.js';
import { decodedMultipartRequest } from '../http/request-decoding.js';
import type { IdempotencyStore } from '../jobs/idempotency.store.js';
import { idempotencyKeyOf, refusedClaim, replayed } from '../jobs/idempotent-job.js';
import type { JobWriter } from '../jobs/job-writer.js';
import { allowanceExhausted } from '../allowance/allowance.headers.js';
import type { UploadSlotHooks } from '../limits/upload-slots.js';
import type { TimeSlicer } from '../http/time-slicer.js';
import { csvFormOptions } from './csv-form-fields.js';
import { readCsvEvents } from './csv-reader.js';

export const MAX_CSV_BYTES = 50 * 1000 * 1000;
/**
 * A compressed upload is refused once past 2 MiB decoded at more than 250 times its compressed
 * size: reading 50 MB of a bomb's zeros through the CSV reader would take about a second of CPU.
 */
const CSV_RATIO_GUARD = { ratio: 250, afterBytes: 2 * 1024 * 1024 };
/** Room for the multipart framing around the file: boundaries, part headers, the form fields. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;

export interface CsvUploadDeps {
  jobs: JobWriter;
  allowance: Allowance;
  idempotency: IdempotencyStore;
  metrics: IngestMetrics;
  /** Takes one of the account's and the address's concurrent upload slots (route hooks). */
  uploadSlots: UploadSlotHooks;
  /** Uploads read at once take turns on the CPU, so other requests are served in between. */
  slicer: TimeSlicer;
}

type FilePart = NonNullable<Awaited<ReturnType<FastifyRequest['file']>>>;

/** The multipart parser with the CSV upload's limits, for the plugin scope of a CSV route. */
export async function registerCsvMultipart(app: FastifyInstance): Promise<void> {
  await app.register(multipart, {
    throwFileSizeLimit: true,
    limits: { fileSize: MAX_CSV_BYTES, files: 1, fields: 10, parts: 11, fieldSize: 1024 },
  });
  // What the parser reads at most (the file, ten small fields, part headers): a refused upload's
  // remainder is read up to this (early-refusal.ts), beyond it the connection is closed.
  app.addHook('onRequest', async (request) => {
    request.bodyDrainLimit = MAX_CSV_BYTES + MULTIPART_OVERHEAD_BYTES;
  });
}

/**
 * The streamed CSV upload shared by POST /v1/backfill/csv (API key) and the dashboard's upload
 * (session): one file part `file`, rows become job chunks in Kafka as they are read, so the file
 * is never held whole. Each chunk is reserved against the allowance once written (a reservation
 * always has its chunks in Kafka, see bulk.routes.ts in the gateway), so an upload that does not fit stops at
 * the first chunk that does not, with 402. The job is sealed (queued) only when the whole file
 * was read; any failure on the way aborts it and gives its reservation back, so nothing of a
 * refused upload is processed or charged. `route` labels the metrics.
 *
 * With an Idempotency-Key, the body digest is the file's bytes: a key already used answers the
 * first upload's 202 (same file) or 422 (another file) after reading the file, without writing
 * or reserving anything.
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
  const key = idempotencyKeyOf(request);
  const earlier = key === undefined ? undefined : await deps.idempotency.peek(account.id, key);
  if (earlier?.state === 'pending') throw refusedClaim({ kind: 'in_progress' });
  if (earlier === undefined) {
    const before = await deps.allowance.state(account);
    if (before.remaining === 0) {
      deps.metrics.allowanceRefusals.inc({ route });
      throw allowanceExhausted(before, `The monthly allowance of ${before.limit} events is used up; nothing was queued.`);
    }
  }

  const part = await filePart(request);
  const form = csvFormOptions(part.fields);
  const file = decodedFile(part);
  const digest = createHash('sha256');
  // The fields change what the bytes mean: a key reused with other fields is another request.
  if (form.delimiter || form.timezone) digest.update(`delimiter=${form.delimiter?.name ?? ''}\ntimezone=${form.timezone ?? ''}\n`);
  if (earlier?.state === 'done') {
    try {
      for await (const bytes of file) digest.update(bytes as Buffer);
    } catch (err) {
      throw part.file.truncated ? tooLarge() : malformedUpload(err);
    }
    if (part.file.truncated) throw tooLarge();
    if (digest.digest('base64url') !== earlier.fingerprint) throw refusedClaim({ kind: 'mismatch' });
    return replayed(reply, earlier.receipt as BulkJobReceipt);
  }

  let streamError: unknown;
  file.on('error', (err) => {
    streamError = err;
  });
  const job = deps.jobs.open(account, 'csv');
  let reserved = 0;
  let claimed = false;
  let outcomeUnknown: ProblemError | undefined;
  try {
    const result = await readCsvEvents(file, {
      accountId: account.id,
      maxRows: MAX_EVENTS_PER_BULK,
      chunkSize: JOB_CHUNK_SIZE,
      ...form,
      onBytes: (bytes) => digest.update(bytes),
      pace: deps.slicer.pacer(),
      onChunk: async (items) => {
        await job.writeChunk(items);
        const { granted, state } = await deps.allowance.reserveJob(account, job.jobId, items.length, job.receivedAtMs);
        reply.allowanceState = state;
        if (!granted) {
          deps.metrics.allowanceRefusals.inc({ route });
          throw allowanceExhausted(state, `The file has more rows than the ${state.remaining + reserved} events that remain this month; nothing was queued.`);
        }
        reserved += items.length;
      },
    });
    if (part.file.truncated) throw tooLarge();

    if (key !== undefined) {
      const claim = await deps.idempotency.claim(account.id, key, digest.digest('base64url'));
      if (claim.kind === 'replay') {
        await giveBack(job.abort('idempotent_replay'));
        return replayed(reply, claim.receipt);
      }
      if (claim.kind !== 'claimed') throw refusedClaim(claim);
      claimed = true;
    }
    const receipt: BulkJobReceipt = { jobId: job.jobId, totalEvents: result.totalRows, status: 'queued' };
    try {
      await job.seal(result.totalRows);
    } catch (err) {
      if (!(err instanceof AppError && err.code === 'kafka_outcome_unknown')) throw err;
      // The seal may have landed: the job may run, so it is neither aborted nor given back (the
      // runner settles it either way) and its key keeps this receipt, so a retry with the key
      // names this job rather than queueing a copy.
      if (key !== undefined) await deps.idempotency.complete(account.id, key, receipt).catch(() => undefined);
      outcomeUnknown = new ProblemError('outcomeUnknown', 'Kafka did not answer in time; the job may have been queued. Check GET /v1/jobs/{jobId}.', {
        extensions: { jobId: job.jobId, totalEvents: result.totalRows },
        cause: err,
      });
      throw outcomeUnknown;
    }
    if (key !== undefined) await deps.idempotency.complete(account.id, key, receipt);
    deps.metrics.jobsCreated.inc({ source: 'csv' });
    request.log.info({ accountId: account.id, jobId: job.jobId, totalEvents: result.totalRows }, 'csv job queued');
    return reply.code(202).send(receipt);
  } catch (caught) {
    if (caught === outcomeUnknown) throw caught;
    // At the size limit the file stream simply ends early (truncated): whatever the reader
    // made of the cut-off file, the answer is 413.
    const err = part.file.truncated
      ? tooLarge()
      : caught === streamError && !(caught instanceof ProblemError) && !isFastifyLimitError(caught)
        ? malformedUpload(caught)
        : caught;
    await giveBack(
      job.abort(err instanceof ProblemError ? err.kind : 'upload_failed').catch((e: unknown) => {
        request.log.warn({ err: e, jobId: job.jobId }, 'could not write the abort marker; the runner drops unsealed chunks');
      }),
    );
    if (claimed && key !== undefined) await deps.idempotency.release(account.id, key).catch(() => undefined);
    if (!(err instanceof ProblemError) && isRetryable(err)) {
      throw new ProblemError('unavailable', 'The upload could not be stored right now; nothing was queued. Retry later.', {
        headers: { 'retry-after': '5' },
        cause: err,
      });
    }
    throw err;
  }

  /** The job will not run: its reservation goes back now (the runner also does, when it drops the job). */
  async function giveBack(aborted: Promise<void>): Promise<void> {
    await aborted;
    if (reserved === 0) return;
    await deps.allowance
      .settleJob({ accountId: account.id, jobId: job.jobId, receivedAtMs: job.receivedAtMs, accepted: 0 })
      .catch((e: unknown) => request.log.error({ err: e, jobId: job.jobId }, 'allowance release failed; the job runner releases it'));
  }
}

/** The one file part, or 400. Errors of the multipart parser itself are the caller's malformed upload. */
async function filePart(request: FastifyRequest): Promise<FilePart> {
  let part: Awaited<ReturnType<FastifyRequest['file']>>;
  try {
    // A whole body sent with Content-Encoding is parsed decompressed, bounded like the file.
    part = await decodedMultipartRequest(request, MAX_CSV_BYTES + MULTIPART_OVERHEAD_BYTES, CSV_RATIO_GUARD).file();
  } catch (err) {
    throw malformedUpload(err);
  }
  if (!part)
    throw new ProblemError('validation', 'The upload has no file part.', {
      errors: [{ field: 'file', code: 'required', message: 'send the CSV as the file part "file"' }],
    });
  if (part.fieldname !== 'file') {
    throw new ProblemError('validation', `The file part must be named "file", not "${part.fieldname.slice(0, 100)}".`, {
      errors: [{ field: part.fieldname.slice(0, 100), code: 'unexpected_part', message: 'the file part must be named "file"' }],
    });
  }
  return part;
}

/**
 * The file's bytes as CSV: a gzip-compressed file (`.csv.gz`, a gzip media type, or simply the
 * gzip signature 1f 8b, which no UTF-8 text starts with) is inflated on the way, its decompressed
 * bytes bounded by MAX_CSV_BYTES like an uncompressed file's (413 past it, while inflating). A file
 * named or typed gzip that is not gzip is a 400. The digest (Idempotency-Key) is of the CSV bytes.
 */
function decodedFile(part: FilePart): BoundedDecoder {
  const declared = /\.gz$/i.test(part.filename ?? '') || /^application\/(x-)?gzip$/i.test(part.mimetype ?? '');
  const decoder = new BoundedDecoder({
    coding: 'sniff-gzip',
    limitBytes: MAX_CSV_BYTES,
    subject: 'the file',
    requireCoded: declared,
    maxRatio: CSV_RATIO_GUARD,
  });
  // The upload reads the decoder and handles its failure; this keeps a failure nobody reads any
  // more (the request already answered) from reaching the process (see request-decoding.ts).
  decoder.on('error', () => undefined);
  part.file.on('error', (err) => decoder.destroy(err));
  part.file.pipe(decoder);
  return decoder;
}

function tooLarge(): ProblemError {
  return new ProblemError('payloadTooLarge', `The file is larger than ${MAX_CSV_BYTES} bytes.`);
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
