import { type EventRecord, type JobChunk, type JobChunkItem, type JobStatus, MAX_ERRORS_LISTED } from '@ingest/schemas';
import { BoundedErrors, type EventCheck, toEventRecord } from '@ingest/domain';

export type JobError = JobStatus['errors'][number];
export type ValidateEvent = (input: unknown, receivedAtMs: number) => EventCheck;

/** GET /v1/jobs/{jobId} shows the first errors only (the schema's maxItems), and how many there were. */
export const MAX_JOB_ERRORS = MAX_ERRORS_LISTED;

export interface JobIdentity {
  jobId: string;
  accountId: string;
  source: 'bulk' | 'csv';
}

export interface JobCounts {
  processed: number;
  accepted: number;
  rejected: number;
  duplicates: number;
  errors: JobError[];
  /** Only when `errors` lists the first MAX_JOB_ERRORS of more. */
  errorsTotal?: number;
  errorsTruncated?: true;
}

/**
 * The counts of one job, folded chunk by chunk in `seq` order. Pure: the same chunks give the
 * same counts, the same errors and the same records, which is what lets a job interrupted by a
 * crash be recomputed from its first chunk instead of resumed from a stale partial count.
 *
 * Each item is one event: an item with `error` (the gateway could not read the CSV row, or the
 * event was too large) is rejected as is; every other item is validated with the one set of
 * event rules. A valid event whose eventId was already accepted earlier in the job is a
 * duplicate: counted, not written again. Invariant: processed = accepted + rejected + duplicates.
 */
export class JobTally {
  private readonly acceptedIds = new Set<string>();
  /** Rejected events by the code of their first error (all of them, unlike `errors`). */
  private readonly codes = new Map<string, number>();
  private readonly state = { processed: 0, accepted: 0, rejected: 0, duplicates: 0 };
  private readonly errors = new BoundedErrors<JobError>(MAX_JOB_ERRORS);

  constructor(
    private readonly job: JobIdentity,
    private readonly validate: ValidateEvent,
  ) {}

  counts(): JobCounts {
    return { ...this.state, ...this.errors.fields() };
  }

  rejectionCodes(): ReadonlyMap<string, number> {
    return new Map(this.codes);
  }

  /** Folds one chunk in; returns the records to write, one per newly accepted eventId. */
  addChunk(chunk: JobChunk): EventRecord[] {
    const records: EventRecord[] = [];
    for (const item of chunk.items) {
      this.state.processed += 1;
      if (item.error) {
        this.reject([this.itemError(item, item.error)]);
        continue;
      }
      const check = this.validate(withJobEventId(item.event, this.job.jobId, item.index), chunk.receivedAtMs);
      if (!check.ok) {
        this.reject(check.errors.map((e) => this.fieldError(item, check.eventId, e)));
        continue;
      }
      if (this.acceptedIds.has(check.event.eventId)) {
        this.state.duplicates += 1;
        continue;
      }
      this.acceptedIds.add(check.event.eventId);
      this.state.accepted += 1;
      records.push(
        toEventRecord(check.event, { accountId: this.job.accountId, receivedAtMs: chunk.receivedAtMs, source: this.job.source, jobId: this.job.jobId }),
      );
    }
    return records;
  }

  private reject(errors: JobError[]): void {
    this.state.rejected += 1;
    const code = errors[0]?.code ?? 'invalid';
    this.codes.set(code, (this.codes.get(code) ?? 0) + 1);
    this.errors.push(...errors);
  }

  private itemError(item: JobChunkItem, error: NonNullable<JobChunkItem['error']>): JobError {
    if (this.job.source === 'csv') {
      return { index: item.index, ...rowOf(item), ...(error.column ? { column: error.column } : {}), code: error.code, message: error.message };
    }
    return { index: item.index, field: `/events/${item.index}`, code: error.code, message: error.message };
  }

  private fieldError(item: JobChunkItem, eventId: string | undefined, e: { field: string; code: string; message: string }): JobError {
    if (this.job.source === 'csv') {
      const column = csvColumnOf(e.field);
      return { index: item.index, ...rowOf(item), ...(column !== undefined ? { column } : {}), code: e.code, message: e.message };
    }
    return { index: item.index, ...(eventId ? { eventId } : {}), field: `/events/${item.index}${e.field}`, code: e.code, message: e.message };
  }
}

function rowOf(item: JobChunkItem): { row?: number } {
  return item.row !== undefined ? { row: item.row } : {};
}

/**
 * The gateway gives every bulk and CSV event an id before it is queued. Should an event still
 * arrive without one, its id must not be minted at random here: a job re-run after a crash
 * would write the event again under a new id, past the (account, eventId) dedupe. So it is
 * derived from the job and the event's position, the same on every run.
 */
export function withJobEventId(event: unknown, jobId: string, index: number): unknown {
  if (typeof event !== 'object' || event === null || Array.isArray(event) || Object.hasOwn(event, 'eventId')) return event;
  return { ...event, eventId: `job_${jobId}_${index}` };
}

const CSV_COLUMNS: Readonly<Record<string, string>> = {
  eventName: 'event_name',
  timestamp: 'timestamp',
  email: 'email',
  domain: 'domain',
  eventId: 'event_id',
};

/**
 * The CSV column an event error is about, from its JSON Pointer: the mapped fields back to
 * their column names, `/properties/<key>` to the column named `<key>` (every other column
 * became a property of that name). Undefined when the error is about no single column.
 */
export function csvColumnOf(pointer: string): string | undefined {
  const [first, second] = pointer.split('/').slice(1).map(unescapePointer);
  if (first === undefined) return undefined;
  if (first === 'properties') return second;
  return Object.hasOwn(CSV_COLUMNS, first) ? CSV_COLUMNS[first] : undefined;
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}
