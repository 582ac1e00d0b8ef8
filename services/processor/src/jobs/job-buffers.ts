import type { JobChunk } from '@ingest/schemas';

/** The chunks of one job read so far, waiting for its seal. */
export interface BufferedJob {
  readonly jobId: string;
  readonly accountId: string;
  readonly source: 'bulk' | 'csv';
  /** The job's time of receipt (its chunks' receivedAtMs): the allowance period it is charged in. */
  readonly receivedAtMs: number;
  /** Offset of the job's first chunk on the partition: the commit must not pass it. */
  firstOffset: bigint;
  /** Newest Kafka timestamp among its chunks. */
  lastChunkAtMs: number;
  /** By `seq`; a repeated seq (a redelivered message) keeps the first copy. */
  readonly chunks: Map<number, JobChunk>;
  /** Size of its chunk messages as read from Kafka. */
  bytes: number;
}

/** Why a job's chunks were given up before its seal. */
export type AbandonReason = 'idle' | 'buffer_full';

export const ABANDON_REASONS: Record<AbandonReason, string> = {
  idle: 'the upload was abandoned: no chunk and no seal arrived within the seal timeout',
  buffer_full: "the upload was abandoned: the job runner's buffer for unsealed jobs was full and this job had been idle the longest",
};

export interface AbandonedJob {
  job: BufferedJob;
  reason: AbandonReason;
}

/** A job that could be given up for room, and the partition holding it. */
interface Held {
  partition: PartitionJobs;
  job: BufferedJob;
}

/** The job that needs room: its id, account and the bytes it brings. */
export interface Incoming {
  jobId: string;
  accountId: string;
  bytes: number;
}

/**
 * Whom to give up for room. The account holding the most bytes (the incoming chunk counted
 * with its account) pays first, with its job idle the longest: one tenant's stalled uploads
 * cannot push out another tenant's jobs while it holds more. Running jobs are never given up.
 * `incoming` when the incoming job's own account is the heaviest and has nothing else to give.
 */
export function pickToGiveUp(held: readonly Held[], incoming: Incoming): Held | 'incoming' | undefined {
  const bytesByAccount = new Map<string, number>([[incoming.accountId, incoming.bytes]]);
  for (const { job } of held) bytesByAccount.set(job.accountId, (bytesByAccount.get(job.accountId) ?? 0) + job.bytes);
  const heaviestFirst = [...bytesByAccount.entries()].sort((a, b) => b[1] - a[1]).map(([accountId]) => accountId);
  for (const accountId of heaviestFirst) {
    let idlest: Held | undefined;
    for (const h of held) {
      if (h.job.accountId !== accountId || h.job.jobId === incoming.jobId || h.partition.isRunning(h.job.jobId)) continue;
      if (!idlest || h.job.lastChunkAtMs < idlest.job.lastChunkAtMs) idlest = h;
    }
    if (idlest) return idlest;
    if (accountId === incoming.accountId) return 'incoming';
  }
  return undefined;
}

/**
 * The bytes of unsealed jobs that one job runner holds, across all its partitions: a stalled
 * upload's chunks were held until its seal timeout (10 min) with no bound, so twenty uploads
 * stalled halfway could hold the processor's memory. When a chunk would pass `maxBytes`, jobs
 * are given up (pickToGiveUp) until it fits.
 */
export class JobBufferBudget {
  private usedBytes = 0;
  private readonly partitions = new Set<PartitionJobs>();

  constructor(readonly maxBytes: number) {}

  get used(): number {
    return this.usedBytes;
  }

  /** For PartitionJobs only. */
  attach(partition: PartitionJobs): void {
    this.partitions.add(partition);
  }

  /** For PartitionJobs only: a partition that is forgotten gives its bytes back. */
  detach(partition: PartitionJobs): void {
    if (this.partitions.delete(partition)) this.usedBytes -= partition.bytes;
  }

  /** For PartitionJobs only. */
  add(bytes: number): void {
    this.usedBytes += bytes;
  }

  /** Gives up jobs of any partition until `incoming` fits; `fits: false` when the incoming job itself must go. */
  makeRoom(incoming: Incoming): { fits: boolean; evicted: AbandonedJob[] } {
    const evicted: AbandonedJob[] = [];
    while (this.usedBytes + incoming.bytes > this.maxBytes) {
      const held = [...this.partitions].flatMap((partition) => [...partition.jobsHeld()].map((job) => ({ partition, job })));
      const pick = pickToGiveUp(held, incoming);
      if (pick === undefined || pick === 'incoming') return { fits: false, evicted };
      evicted.push(pick.partition.abandon(pick.job.jobId, 'buffer_full'));
    }
    return { fits: true, evicted };
  }
}

export interface PartitionJobsLimits {
  /** A job with no new chunk for this long (Kafka time) and no seal is given up. */
  sealTimeoutMs: number;
  /** Bytes of unsealed jobs this partition may hold. */
  maxBytes?: number;
  /** Shared by the runner's partitions; default: a budget of this partition's own. */
  budget?: JobBufferBudget;
}

/**
 * What the job runner knows about one partition of `jobs.chunks`: the jobs whose chunks were
 * read but which are not finished yet. Pure (no I/O, no clock): time is the Kafka timestamps
 * of the messages, so rebuilding the state by re-reading the partition gives the same state,
 * and the same abandonment decisions, as the first read (the byte caps aside: which job is
 * given up depends on what the other partitions hold, and a given-up job fails either way).
 *
 * The state is only valid as a function of a contiguous run of offsets starting at or before
 * the first chunk of every job it holds. `continuesAt` tells whether a batch extends that run;
 * when it does not (a restart or rebalance re-reads from the committed offset, or another
 * member moved the partition on), the caller starts from a fresh state.
 */
export class PartitionJobs {
  private readonly jobs = new Map<string, BufferedJob>();
  /** Jobs given up before their seal, and when (Kafka time): their later chunks are not kept. */
  private readonly abandoned = new Map<string, { reason: AbandonReason; atMs: number }>();
  /** Jobs being run: never given up for room. */
  private readonly running = new Set<string>();
  private newest = Number.NEGATIVE_INFINITY;
  private next: bigint | undefined;
  private heldBytes = 0;
  private readonly sealTimeoutMs: number;
  private readonly maxBytes: number;
  private readonly budget: JobBufferBudget;

  constructor(limits: PartitionJobsLimits | number) {
    const l = typeof limits === 'number' ? { sealTimeoutMs: limits } : limits;
    this.sealTimeoutMs = l.sealTimeoutMs;
    this.maxBytes = l.maxBytes ?? Number.POSITIVE_INFINITY;
    this.budget = l.budget ?? new JobBufferBudget(Number.POSITIVE_INFINITY);
    this.budget.attach(this);
  }

  get size(): number {
    return this.jobs.size;
  }

  /** Bytes of the chunks held. */
  get bytes(): number {
    return this.heldBytes;
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

  /**
   * Keeps a chunk of `bytes` (its message size), making room first by giving up other jobs
   * (pickToGiveUp), of this partition for its own cap and of any partition for the shared
   * budget. When the chunk's own account is the one to pay and has nothing else to give, the
   * chunk's own job is given up. Returns the jobs given up, on any partition.
   */
  addChunk(offset: bigint, timestampMs: number, chunk: JobChunk, bytes = 0): AbandonedJob[] {
    if (this.abandoned.has(chunk.jobId)) return [];
    const job = this.jobs.get(chunk.jobId);
    if (job?.chunks.has(chunk.seq)) {
      if (offset < job.firstOffset) job.firstOffset = offset;
      return [];
    }
    const incoming: Incoming = { jobId: chunk.jobId, accountId: chunk.accountId, bytes };
    const evicted: AbandonedJob[] = [];
    while (this.heldBytes + bytes > this.maxBytes) {
      const pick = pickToGiveUp(
        [...this.jobs.values()].map((job) => ({ partition: this as PartitionJobs, job })),
        incoming,
      );
      if (pick === undefined || pick === 'incoming') break;
      evicted.push(this.abandon(pick.job.jobId, 'buffer_full'));
    }
    const room = this.heldBytes + bytes <= this.maxBytes ? this.budget.makeRoom(incoming) : { fits: false, evicted: [] };
    evicted.push(...room.evicted);
    if (!room.fits) {
      if (job) {
        evicted.push(this.abandon(job.jobId, 'buffer_full'));
      } else {
        this.abandoned.set(chunk.jobId, { reason: 'buffer_full', atMs: timestampMs });
        const { jobId, accountId, source } = chunk;
        evicted.push({
          job: { jobId, accountId, source, receivedAtMs: chunk.receivedAtMs, firstOffset: offset, lastChunkAtMs: timestampMs, chunks: new Map(), bytes: 0 },
          reason: 'buffer_full',
        });
      }
      return evicted;
    }
    this.keep(offset, timestampMs, chunk, bytes);
    return evicted;
  }

  private keep(offset: bigint, timestampMs: number, chunk: JobChunk, bytes: number): void {
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
        bytes: 0,
      };
      this.jobs.set(chunk.jobId, job);
    }
    if (offset < job.firstOffset) job.firstOffset = offset;
    if (timestampMs > job.lastChunkAtMs) job.lastChunkAtMs = timestampMs;
    job.chunks.set(chunk.seq, chunk);
    job.bytes += bytes;
    this.heldBytes += bytes;
    this.budget.add(bytes);
  }

  get(jobId: string): BufferedJob | undefined {
    return this.jobs.get(jobId);
  }

  /** Why a job was given up before its seal, if it was. */
  abandonedReason(jobId: string): AbandonReason | undefined {
    return this.abandoned.get(jobId)?.reason;
  }

  /** While a job runs it is never given up for room. */
  setRunning(jobId: string, running: boolean): void {
    if (running) this.running.add(jobId);
    else this.running.delete(jobId);
  }

  /** The job is finished (or aborted): its chunks no longer hold the commit back. */
  remove(jobId: string): BufferedJob | undefined {
    const job = this.jobs.get(jobId);
    if (job) {
      this.jobs.delete(jobId);
      this.heldBytes -= job.bytes;
      this.budget.add(-job.bytes);
    }
    this.abandoned.delete(jobId);
    this.running.delete(jobId);
    return job;
  }

  /** The jobs held now. */
  jobsHeld(): IterableIterator<BufferedJob> {
    return this.jobs.values();
  }

  isRunning(jobId: string): boolean {
    return this.running.has(jobId);
  }

  /** Gives a job up: its chunks are dropped and later ones ignored; its seal will fail it. */
  abandon(jobId: string, reason: AbandonReason): AbandonedJob {
    const job = this.jobs.get(jobId);
    if (!job) throw new Error(`job ${jobId} is not buffered`);
    this.remove(jobId);
    this.abandoned.set(jobId, { reason, atMs: job.lastChunkAtMs });
    return { job, reason };
  }

  /**
   * Jobs whose newest chunk is more than `sealTimeoutMs` older than `newestMs` (the newest
   * message read on the partition so far) are given up, an upload that died without writing
   * its abort: removed and returned. An idle partition abandons nothing, since no newer
   * message says time has passed (its bytes stay within the caps). Jobs given up long ago are
   * forgotten here too.
   */
  expire(newestMs: number): BufferedJob[] {
    const expired: BufferedJob[] = [];
    for (const job of this.jobs.values()) {
      if (!this.running.has(job.jobId) && newestMs - job.lastChunkAtMs > this.sealTimeoutMs) expired.push(job);
    }
    for (const job of expired) this.abandon(job.jobId, 'idle');
    for (const [jobId, { atMs }] of this.abandoned) {
      if (newestMs - atMs > 2 * this.sealTimeoutMs) this.abandoned.delete(jobId);
    }
    return expired;
  }

  /** The partition is forgotten (revoked, or re-read from another offset): its bytes are free. */
  release(): void {
    this.budget.detach(this);
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
