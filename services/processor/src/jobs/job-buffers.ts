import type { JobChunk } from '@ingest/schemas';

/** The chunks of one job read so far, waiting for its seal. */
export interface BufferedJob {
  readonly jobId: string;
  readonly accountId: string;
  readonly source: 'bulk' | 'csv';
  /** Offset of the job's first chunk on the partition: the commit must not pass it. */
  firstOffset: bigint;
  /** The job's time of receipt (its chunks' receivedAtMs): the allowance period it is charged in. */
  readonly receivedAtMs: number;
  /** Newest Kafka timestamp among its chunks. */
  lastChunkAtMs: number;
  /** By `seq`; a repeated seq (a redelivered message) keeps the first copy. */
  readonly chunks: Map<number, JobChunk>;
}

/**
 * What the job runner knows about one partition of `jobs.chunks`: the jobs whose chunks were
 * read but which are not finished yet. Pure (no I/O, no clock): time is the Kafka timestamps
 * of the messages, so rebuilding the state by re-reading the partition gives the same state,
 * and the same abandonment decisions, as the first read.
 *
 * The state is only valid as a function of a contiguous run of offsets starting at or before
 * the first chunk of every job it holds. `continuesAt` tells whether a batch extends that run;
 * when it does not (a restart or rebalance re-reads from the committed offset, or another
 * member moved the partition on), the caller starts from a fresh state.
 */
export class PartitionJobs {
  private readonly jobs = new Map<string, BufferedJob>();
  private newest = Number.NEGATIVE_INFINITY;
  private next: bigint | undefined;

  constructor(private readonly sealTimeoutMs: number) {}

  get size(): number {
    return this.jobs.size;
  }

  /** Newest message timestamp of the batches handled so far. */
  get newestMs(): number {
    return this.newest;
  }

  /** True when a batch starting at `offset` continues what this state has seen. */
  continuesAt(offset: bigint): boolean {
    return this.next === undefined ? this.jobs.size === 0 : this.next === offset;
  }

  /**
   * A batch was handled to its end. Position and clock move only here: when a batch throws
   * half way, it is delivered again from its first message and re-applied onto the same
   * position (adding a chunk twice, or removing a finished job twice, changes nothing).
   */
  endBatch(nextOffset: bigint, newestMs: number): void {
    this.next = nextOffset;
    if (newestMs > this.newest) this.newest = newestMs;
  }

  addChunk(offset: bigint, timestampMs: number, chunk: JobChunk): void {
    let job = this.jobs.get(chunk.jobId);
    if (!job) {
      job = {
        jobId: chunk.jobId,
        accountId: chunk.accountId,
        source: chunk.source,
        receivedAtMs: chunk.receivedAtMs,
        firstOffset: offset,
        lastChunkAtMs: timestampMs,
        chunks: new Map(),
      };
      this.jobs.set(chunk.jobId, job);
    }
    if (offset < job.firstOffset) job.firstOffset = offset;
    if (timestampMs > job.lastChunkAtMs) job.lastChunkAtMs = timestampMs;
    if (!job.chunks.has(chunk.seq)) job.chunks.set(chunk.seq, chunk);
  }

  get(jobId: string): BufferedJob | undefined {
    return this.jobs.get(jobId);
  }

  /** The job is finished (or aborted): its chunks no longer hold the commit back. */
  remove(jobId: string): BufferedJob | undefined {
    const job = this.jobs.get(jobId);
    this.jobs.delete(jobId);
    return job;
  }

  /**
   * Jobs whose newest chunk is more than `sealTimeoutMs` older than `newestMs` (the newest
   * message read on the partition so far): an upload that died without writing its abort. They
   * stay until the caller has given them up (`remove`), so a failure half way through giving them
   * up (their allowance released) leaves them here to be given up again. An idle partition
   * abandons nothing, since no newer message says time has passed.
   */
  overdue(newestMs: number): BufferedJob[] {
    return [...this.jobs.values()].filter((job) => newestMs - job.lastChunkAtMs > this.sealTimeoutMs);
  }

  /**
   * The next offset to read after a restart: the first chunk of the oldest unfinished job, or
   * just after the last message seen when no job is pending. Undefined before any message.
   */
  commitOffset(): bigint | undefined {
    let lowest = this.next;
    for (const job of this.jobs.values()) {
      if (lowest === undefined || job.firstOffset < lowest) lowest = job.firstOffset;
    }
    return lowest;
  }
}
