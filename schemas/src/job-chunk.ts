import { type Static, Type } from '@sinclair/typebox';
import { ErrorsBound, MAX_ERRORS_LISTED } from './ingest-event.js';

/**
 * Bulk and CSV jobs travel on `jobs.chunks`, keyed by jobId so a job's messages stay in order
 * on one partition: `chunk` messages of up to 500 events, then exactly one `sealed` (the
 * upload is complete and accepted) or `aborted` (the upload failed; discard its chunks).
 * A job runner processes a job's chunks only once it has seen its seal.
 *
 * `v` is the wire-format version, changed by the rule of EventRecord's (docs/architecture.md,
 * "Wire contracts"): the objects are open, so a job runner one release behind accepts the
 * optional fields a newer gateway adds, and ignores them.
 */
export const JOB_CHUNK_SIZE = 500;

const JobBase = {
  v: Type.Literal(1),
  jobId: Type.String({ minLength: 1 }),
  accountId: Type.String({ minLength: 1 }),
  source: Type.Union([Type.Literal('bulk'), Type.Literal('csv')]),
};

export const JobChunkItem = Type.Object(
  {
    /** 0-based position of the event in the job. */
    index: Type.Integer({ minimum: 0 }),
    /** CSV only: 1-based row in the file (the header is row 1). */
    row: Type.Optional(Type.Integer({ minimum: 2 })),
    /** The event as submitted (CSV: mapped to the event shape); validated by the job runner. */
    event: Type.Unknown(),
    /** CSV only: a problem found while reading the row (e.g. wrong column count). */
    error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String(), column: Type.Optional(Type.String()) })),
  },
  {},
);

export const JobChunk = Type.Object(
  {
    ...JobBase,
    type: Type.Literal('chunk'),
    seq: Type.Integer({ minimum: 0 }),
    receivedAtMs: Type.Integer(),
    items: Type.Array(JobChunkItem, { maxItems: JOB_CHUNK_SIZE }),
  },
  { $id: 'JobChunk' },
);

export const JobSealed = Type.Object(
  { ...JobBase, type: Type.Literal('sealed'), chunks: Type.Integer({ minimum: 0 }), totalEvents: Type.Integer({ minimum: 0 }), receivedAtMs: Type.Integer() },
  { $id: 'JobSealed' },
);

export const JobAborted = Type.Object({ ...JobBase, type: Type.Literal('aborted'), reason: Type.String() }, { $id: 'JobAborted' });

export const JobMessage = Type.Union([JobChunk, JobSealed, JobAborted]);

export type JobChunkItem = Static<typeof JobChunkItem>;
export type JobChunk = Static<typeof JobChunk>;
export type JobSealed = Static<typeof JobSealed>;
export type JobAborted = Static<typeof JobAborted>;
export type JobMessage = Static<typeof JobMessage>;

export const JobStatusValue = Type.Union([Type.Literal('queued'), Type.Literal('processing'), Type.Literal('completed'), Type.Literal('failed')]);

/** What GET /v1/jobs/{jobId} returns; also the value of the compacted `jobs.progress` topic. */
export const JobStatus = Type.Object(
  {
    jobId: Type.String(),
    accountId: Type.String(),
    source: Type.Union([Type.Literal('bulk'), Type.Literal('csv')]),
    status: JobStatusValue,
    totalEvents: Type.Integer({ minimum: 0 }),
    processed: Type.Integer({ minimum: 0 }),
    accepted: Type.Integer({ minimum: 0 }),
    rejected: Type.Integer({ minimum: 0 }),
    duplicates: Type.Integer({ minimum: 0 }),
    errors: Type.Array(
      Type.Object({
        index: Type.Integer(),
        row: Type.Optional(Type.Integer()),
        eventId: Type.Optional(Type.String()),
        field: Type.Optional(Type.String()),
        column: Type.Optional(Type.String()),
        code: Type.String(),
        message: Type.String(),
      }),
      { maxItems: MAX_ERRORS_LISTED },
    ),
    ...ErrorsBound,
    createdAt: Type.String(),
    updatedAt: Type.String(),
    startedAt: Type.Union([Type.String(), Type.Null()]),
    completedAt: Type.Union([Type.String(), Type.Null()]),
    failureReason: Type.Optional(Type.String()),
  },
  { $id: 'JobStatus', additionalProperties: false },
);
export type JobStatus = Static<typeof JobStatus>;
