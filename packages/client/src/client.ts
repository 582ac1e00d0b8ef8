import { v7 as uuidv7 } from 'uuid';
import { type BatchOutcome, type Rejection, sendBatch } from './batch.sender.js';
import { type ClientOptions, resolveOptions, type ResolvedOptions } from './client.options.js';
import { IngestClientError, type QuotaExceededError } from './errors.js';
import { checkEvent } from './event.check.js';
import type { QueuedEvent, TrackEvent } from './event.types.js';
import type { TransportOptions } from './http.transport.js';
import { bulk, type CsvOptions, type CsvSource, type JobDeps, type JobOptions, type JobStatus, uploadCsv } from './jobs.js';

/**
 * The producer's side of `POST /v1/events`: a bounded FIFO queue in memory, one worker that
 * takes batches from its head (≤ maxEvents, ≤ maxBytes) and sends them one request at a time
 * (the per-address limit is 2 requests a second; parallel requests would only meet it sooner),
 * and settles each batch (accepted, rejected per event, given up, or held back by a 402).
 *
 * Memory is bounded: the queue holds at most `queue.maxEvents`, plus the one batch in flight,
 * plus the events of at most `queue.maxWaiting` callers waiting for room.
 */
export interface ClientStats {
  /** Events in the queue, not yet sent. */
  queued: number;
  /** Events of the request in flight (or waiting for its retry). */
  inFlight: number;
  accepted: number;
  /** Events the API rejected (each reported to onRejected with its code). */
  rejected: number;
  /** Events given up after their retries, or refused whole by the API (reported to onError with the events). */
  failed: number;
  /** Events not queued because the queue was full (`whenFull: 'drop'`). */
  dropped: number;
  requests: number;
  retries: number;
}

export interface TrackResult {
  eventId: string;
  /** False when the queue was full and the event was dropped (`whenFull: 'drop'`). */
  queued: boolean;
}

interface Entry {
  event: QueuedEvent;
  bytes: number;
  seq: number;
}

const ENVELOPE_BYTES = '{"events":[]}'.length;
/** Browsers refuse keepalive requests once their bodies in flight pass 64 KiB; a little is left for others. */
const KEEPALIVE_BUDGET_BYTES = 60 * 1024;

export class IngestClient {
  readonly #options: ResolvedOptions;
  readonly #sender: JobDeps;
  #queue: Entry[] = [];
  #inFlight: Entry[] = [];
  /** Batches sent by flushKeepalive() beside the worker's. */
  #sideFlights: Entry[][] = [];
  #seq = 0;
  #waiting: (() => void)[] = [];
  #flushes: { through: number; resolve: () => void; reject: (e: Error) => void }[] = [];
  #timer: ReturnType<typeof setTimeout> | undefined;
  #pumping = false;
  #pauseUntil = 0;
  #stopped: QuotaExceededError | undefined;
  #resumeTimer: ReturnType<typeof setTimeout> | undefined;
  #closed = false;
  readonly #stats = { accepted: 0, rejected: 0, failed: 0, dropped: 0, requests: 0, retries: 0 };

  constructor(options: ClientOptions) {
    this.#options = resolveOptions(options);
    const transport: TransportOptions = {
      baseUrl: this.#options.baseUrl,
      apiKey: this.#options.apiKey,
      timeoutMs: this.#options.timeoutMs,
      compression: this.#options.compression,
      compressMinBytes: 1024,
      fetch: (input, init) => {
        this.#stats.requests++;
        return this.#options.fetch(input, init);
      },
    };
    this.#sender = {
      transport,
      retry: this.#options.retry,
      now: Date.now,
      random: Math.random,
      sleep: (ms) => this.#sleep(ms),
      onRetry: () => void this.#stats.retries++,
      uploadTimeoutMs: this.#options.uploadTimeoutMs,
    };
  }

  /**
   * Checks the event against the API's rules (a bad one is refused here, with the API's codes:
   * `invalid_event`), gives it a UUIDv7 `eventId` unless it has one, and queues it. Resolves once
   * queued, not once sent: `flush()` waits for sending.
   */
  async track(event: TrackEvent): Promise<TrackResult> {
    if (this.#closed) throw new IngestClientError('closed', 'track() after close()');
    const errors = checkEvent(event, Date.now());
    if (errors.length > 0) {
      throw new IngestClientError('invalid_event', `the event breaks the API's rules: ${errors.map((e) => `${e.field} ${e.code}`).join(', ')}`, {
        status: 400,
        errors,
        eventCount: 1,
      });
    }
    const queued: QueuedEvent = { ...event, eventId: event.eventId ?? uuidv7() };
    const bytes = new TextEncoder().encode(JSON.stringify(queued)).byteLength;
    if (bytes + ENVELOPE_BYTES > this.#options.maxBatchBytes) {
      throw new IngestClientError('invalid_event', `the event is ${bytes} bytes of JSON, over batch.maxBytes (${this.#options.maxBatchBytes})`, {
        status: 413,
        errors: [{ field: '', code: 'too_large', message: `is ${bytes} bytes, over ${this.#options.maxBatchBytes}` }],
        eventCount: 1,
      });
    }
    if (this.#queue.length >= this.#options.maxQueueEvents) {
      if (this.#options.whenFull === 'drop') {
        this.#stats.dropped++;
        return { eventId: queued.eventId, queued: false };
      }
      // Stopped by a 402, the queue will not drain by itself: waiting would never end.
      if (this.#stopped) throw this.#stopped;
      if (this.#waiting.length >= this.#options.maxWaiting) {
        throw new IngestClientError(
          'queue_full',
          `the queue is full (${this.#options.maxQueueEvents} events) and ${this.#waiting.length} callers already wait for room`,
          {
            eventCount: 1,
          },
        );
      }
      do {
        await new Promise<void>((resolve) => this.#waiting.push(resolve));
        if (this.#closed) throw new IngestClientError('closed', 'the client was closed while track() waited for room');
        if (this.#stopped && this.#queue.length >= this.#options.maxQueueEvents) throw this.#stopped;
      } while (this.#queue.length >= this.#options.maxQueueEvents);
    }
    this.#queue.push({ event: queued, bytes, seq: ++this.#seq });
    this.#schedule();
    return { eventId: queued.eventId, queued: true };
  }

  /** Sends everything queued so far; resolves once each of those events is settled (accepted, rejected or given up). Rejects while a 402 holds sending. */
  flush(): Promise<void> {
    const through = this.#seq;
    if (this.#settledThrough(through)) return this.#stopped && this.#queue.length > 0 ? Promise.reject(this.#stopped) : Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.#flushes.push({ through, resolve, reject });
      void this.#pump();
    });
  }

  /**
   * Refuses further track() calls, sends what is queued (flush()) and stops the timer. Nothing
   * queued is lost unless sending is stopped by a 402 (then it rejects with that error) or
   * `timeoutMs` passes first (then it rejects with `close_timeout`); either way `takeUnsent()`
   * hands over what was not sent, e.g. to write it to disk before the process exits.
   */
  async close(options: { timeoutMs?: number } = {}): Promise<void> {
    this.#closed = true;
    for (const wake of this.#waiting.splice(0)) wake();
    let deadline: ReturnType<typeof setTimeout> | undefined;
    try {
      const flushed = this.flush();
      if (options.timeoutMs === undefined) return await flushed;
      await Promise.race([
        flushed,
        new Promise<never>((_, reject) => {
          deadline = setTimeout(() => {
            const unsent = this.#queue.length + this.#inFlight.length;
            reject(
              new IngestClientError('close_timeout', `close() gave up after ${options.timeoutMs} ms with ${unsent} events not yet sent`, {
                eventCount: unsent,
              }),
            );
          }, options.timeoutMs);
        }),
      ]);
    } finally {
      clearTimeout(deadline);
      clearTimeout(this.#timer);
      clearTimeout(this.#resumeTimer);
      this.#timer = undefined;
    }
  }

  /** Up to 10,000 events as one backfill job (`POST /v1/events/bulk`), with an Idempotency-Key; resolves with the job's final status. */
  bulk(events: readonly TrackEvent[], options?: JobOptions): Promise<JobStatus> {
    return bulk(this.#sender, events, options);
  }

  /** A CSV file as one backfill job (`POST /v1/backfill/csv`), gzipped, with an Idempotency-Key; resolves with the job's final status. */
  uploadCsv(source: CsvSource, options?: CsvOptions): Promise<JobStatus> {
    return uploadCsv(this.#sender, source, options);
  }

  /** After a 402: sends again at once (e.g. once the plan was upgraded). The client also resumes by itself when the allowance resets (`resetsAt`). */
  resume(): void {
    clearTimeout(this.#resumeTimer);
    this.#resumeTimer = undefined;
    this.#stopped = undefined;
    void this.#pump();
  }

  /**
   * Resumes when the allowance resets. The timer is unref'd in Node: a process whose only work
   * left is events held by a 402 may end (close() rejects and takeUnsent() hands them over)
   * rather than stay up until the month turns.
   */
  #resumeAtReset(error: QuotaExceededError): void {
    const at = error.quota.resetsAt === undefined ? Number.NaN : Date.parse(error.quota.resetsAt);
    const wait = at - Date.now();
    // setTimeout's limit is 2^31-1 ms (24.8 days); a reset further away is left to resume().
    if (!Number.isFinite(wait) || wait > 2 ** 31 - 1 || this.#resumeTimer !== undefined) return;
    this.#resumeTimer = setTimeout(() => this.resume(), Math.max(0, wait));
    (this.#resumeTimer as { unref?: () => void }).unref?.();
  }

  /**
   * The events not yet settled, e.g. held by a 402 or a hanging server at shutdown: the queue
   * (removed from it) and the requests still in flight (their answer may yet come: their
   * `eventId`s make sending them again safe).
   */
  takeUnsent(): QueuedEvent[] {
    const inFlight = [this.#inFlight, ...this.#sideFlights].flat().map((e) => e.event);
    const events = this.#queue.splice(0).map((e) => e.event);
    this.#settleFlushes();
    for (const wake of this.#waiting.splice(0)) wake();
    return [...inFlight, ...events];
  }

  stats(): ClientStats {
    return { queued: this.#queue.length, inFlight: this.#inFlight.length + this.#sideFlights.reduce((n, b) => n + b.length, 0), ...this.#stats };
  }

  /**
   * Sends what is queued at once with `fetch(…, { keepalive: true })`, up to the browsers' 64 KiB
   * budget for requests that outlive their page: what a page does when it is hidden or unloaded
   * (`createBrowserClient` calls it on `visibilitychange` to hidden and on `pagehide`). What does
   * not fit stays queued, and is sent as usual if the page lives on.
   */
  flushKeepalive(): void {
    let budget = KEEPALIVE_BUDGET_BYTES;
    const deps = { ...this.#sender, transport: { ...this.#sender.transport, keepalive: true } };
    while (this.#queue.length > 0 && !this.#stopped) {
      const batch = this.#takeBatch(Math.min(budget, this.#options.maxBatchBytes));
      if (batch.length === 0) break;
      budget -= batch.reduce((n, e) => n + e.bytes + 1, ENVELOPE_BYTES);
      this.#sideFlights.push(batch);
      for (const wake of this.#waiting.splice(0, batch.length)) wake();
      void sendBatch(
        deps,
        batch.map((e) => e.event),
      ).then((outcome) => {
        this.#sideFlights = this.#sideFlights.filter((b) => b !== batch);
        this.#settle(batch, outcome);
        this.#settleFlushes();
      });
    }
  }

  /** Whether every event up to `seq` has left the queue and the requests in flight. */
  #settledThrough(seq: number): boolean {
    const firsts = [this.#inFlight[0], this.#queue[0], ...this.#sideFlights.map((b) => b[0])].filter((e): e is Entry => e !== undefined);
    return firsts.every((e) => e.seq > seq);
  }

  #settleFlushes(): void {
    this.#flushes = this.#flushes.filter((f) => {
      if (this.#settledThrough(f.through)) f.resolve();
      else if (this.#stopped) f.reject(this.#stopped);
      else return true;
      return false;
    });
  }

  /** A batch is due when it is full, when a flush waits for it, or when its oldest event has waited intervalMs. */
  #schedule(): void {
    if (this.#queue.length >= this.#options.maxBatchEvents || this.#queuedBytes(this.#options.maxBatchBytes) >= this.#options.maxBatchBytes) {
      void this.#pump();
    } else if (this.#timer === undefined) {
      this.#timer = setTimeout(() => {
        this.#timer = undefined;
        void this.#pump(true);
      }, this.#options.intervalMs);
    }
  }

  /** Bytes of the queue's head as one request body, counted up to `limit`. */
  #queuedBytes(limit: number): number {
    let total = ENVELOPE_BYTES;
    for (const e of this.#queue) {
      total += e.bytes + 1;
      if (total >= limit) break;
    }
    return total;
  }

  #takeBatch(maxBytes = this.#options.maxBatchBytes): Entry[] {
    let bytes = ENVELOPE_BYTES;
    let n = 0;
    for (const e of this.#queue) {
      if (n === this.#options.maxBatchEvents || bytes + e.bytes + 1 > maxBytes) break;
      bytes += e.bytes + 1;
      n++;
    }
    return this.#queue.splice(0, n);
  }

  #due(timerFired: boolean): boolean {
    if (this.#queue.length === 0 || this.#stopped) return false;
    if (timerFired || this.#closed || this.#flushes.length > 0) return true;
    return this.#queue.length >= this.#options.maxBatchEvents || this.#queuedBytes(this.#options.maxBatchBytes) >= this.#options.maxBatchBytes;
  }

  async #pump(timerFired = false): Promise<void> {
    if (this.#pumping) return;
    this.#pumping = true;
    try {
      while (this.#due(timerFired)) {
        const pause = this.#pauseUntil - Date.now();
        if (pause > 0) await this.#sleep(pause);
        this.#inFlight = this.#takeBatch();
        for (const wake of this.#waiting.splice(0, this.#inFlight.length)) wake();
        const outcome = await sendBatch(
          this.#sender,
          this.#inFlight.map((e) => e.event),
        );
        const batch = this.#inFlight;
        this.#inFlight = [];
        this.#settle(batch, outcome);
        // A flush that is now settled resolves at once, not when traffic pauses.
        this.#settleFlushes();
        // Whatever the timer was due for has been sent; the rest waits for its own reason.
        timerFired = false;
      }
    } finally {
      this.#pumping = false;
      this.#settleFlushes();
      if (this.#queue.length > 0 && !this.#stopped && this.#timer === undefined) this.#schedule();
    }
  }

  #settle(batch: Entry[], outcome: BatchOutcome): void {
    if (outcome.kind === 'failed') {
      this.#stats.failed += batch.length;
      this.#notify(() => this.#options.onError(outcome.error));
      return;
    }
    this.#stats.accepted += outcome.accepted;
    this.#report(outcome.rejected);
    if (outcome.kind === 'delivered') {
      if (outcome.rateLimitWaitMs !== undefined) this.#pauseUntil = Date.now() + outcome.rateLimitWaitMs;
      return;
    }
    // 402: what was not taken goes back to the head, in order, for after resume().
    const unsent = new Set(outcome.unsent.map((e) => e.eventId));
    this.#queue.unshift(...batch.filter((e) => unsent.has(e.event.eventId)));
    this.#stopped = outcome.error;
    this.#resumeAtReset(outcome.error);
    // Callers waiting for room would wait until resume(): they are told instead.
    for (const wake of this.#waiting.splice(0)) wake();
    this.#notify(() => this.#options.onError(outcome.error));
  }

  #report(rejected: Rejection[]): void {
    if (rejected.length === 0) return;
    this.#stats.rejected += rejected.length;
    this.#notify(() => this.#options.onRejected(rejected));
  }

  /** A callback of the caller that throws must not stop the sending loop (nor crash the process as an unhandled rejection). */
  #notify(callback: () => void): void {
    try {
      callback();
    } catch (err) {
      console.error(`@ingest/client: an onError/onRejected callback threw: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, ms));
  }
}

export function createClient(options: ClientOptions): IngestClient {
  return new IngestClient(options);
}
