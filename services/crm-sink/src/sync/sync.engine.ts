import { setTimeout as sleep } from 'node:timers/promises';
import type { EventRecord } from '@ingest/schemas';
import {
  type ConsumedMessage,
  type DeadLetterSink,
  type Logger,
  type MappingReader,
  planSync,
  type SyncStateStore,
  type SyncStateUpdate,
} from '@ingest/shared';
import type { CrmAdapter, CreateAdapter } from '../adapters/adapter.js';
import { type AccountLimiter, createAccountLimiter, type RateLimit, type RetryPolicy } from '../rate/account-limiter.js';
import { fullJitterDelayMs } from '../rate/backoff.js';
import { type AccountFlush, createCoalescer } from './coalescer.js';
import { executeFlush, type FlushEvent, type RecordFailure } from './flush.executor.js';
import type { RecordStateStore } from './record-state.store.js';
import type { SyncMetrics } from './sync.metrics.js';

/**
 * Events in, CRM effects out. Plans each event with the account's newest mapping, coalesces the
 * operations per record, and runs each account's flushes one after another (so a record's
 * writes stay in event order) while accounts run side by side: a paused or failing CRM delays
 * only its own account. An event is finished (its offset may be committed) once it was synced,
 * skipped, or dead-lettered, and its sync state is recorded.
 */
export interface SinkEvent {
  record: EventRecord;
  message: ConsumedMessage;
  /** Called once the event's outcome is durable. */
  finish(): void;
}

interface PendingEvent extends FlushEvent {
  sink: SinkEvent;
}

export interface SyncEngineDeps {
  mappings: MappingReader;
  createAdapter: CreateAdapter;
  store: RecordStateStore;
  syncStates: SyncStateStore;
  deadLetters: DeadLetterSink;
  logger: Logger;
  metrics: SyncMetrics;
  coalesceWindowMs: number;
  coalesceMaxRecords: number;
  rate: RateLimit;
  retry: RetryPolicy;
  /** The account's shared token bucket (Redis); without it each instance keeps its own. */
  tokenBucketOf?: (accountId: string) => () => Promise<number>;
  now?: () => number;
}

export interface SyncEngine {
  /** Plans the events; skipped ones are recorded and finished before this resolves. */
  submit(events: readonly SinkEvent[]): Promise<void>;
  /** Abandons buffered and waiting work (left unfinished, so uncommitted) and waits for running flushes to end. */
  stop(): Promise<void>;
}

interface AccountWorker {
  limiter: AccountLimiter;
  queue: AccountFlush<PendingEvent>[];
  running?: Promise<void>;
  adapter?: { ref: string; adapter: CrmAdapter };
}

/** HTTP adapters own a keep-alive pool (`close`); the in-memory ones do not. */
async function closeAdapter(adapter: CrmAdapter): Promise<void> {
  const closable = adapter as CrmAdapter & { close?: () => Promise<void> };
  await closable.close?.().catch(() => undefined);
}

const INFRA_RETRY = { baseMs: 200, capMs: 10_000 };

export function createSyncEngine(deps: SyncEngineDeps): SyncEngine {
  const now = deps.now ?? Date.now;
  const log = deps.logger.child({ component: 'crm-sync' });
  const coalescer = createCoalescer<PendingEvent>({ windowMs: deps.coalesceWindowMs, maxRecords: deps.coalesceMaxRecords });
  const workers = new Map<string, AccountWorker>();
  const abort = new AbortController();
  let timer: NodeJS.Timeout | undefined;

  function worker(accountId: string): AccountWorker {
    let w = workers.get(accountId);
    if (!w) {
      w = {
        queue: [],
        limiter: createAccountLimiter({
          rate: deps.rate,
          retry: deps.retry,
          ...(deps.tokenBucketOf ? { takeToken: deps.tokenBucketOf(accountId) } : {}),
          now,
          events: {
            onRetry: (kind) => deps.metrics.retries.inc({ kind }),
            onPause: (paused) => {
              if (paused) deps.metrics.pausedAccounts.inc();
              else deps.metrics.pausedAccounts.dec();
              if (paused) log.warn({ accountId }, 'CRM rate limit: account paused until Retry-After');
            },
          },
        }),
      };
      workers.set(accountId, w);
    }
    return w;
  }

  function schedule(): void {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (abort.signal.aborted) return;
    const wait = coalescer.nextDueInMs(now());
    if (wait === undefined) return;
    timer = setTimeout(() => {
      timer = undefined;
      for (const flush of coalescer.takeDue(now())) enqueue(flush);
      schedule();
    }, wait);
  }

  function enqueue(flush: AccountFlush<PendingEvent>): void {
    const w = worker(flush.accountId);
    w.queue.push(flush);
    w.running ??= drain(flush.accountId, w).finally(() => {
      w.running = undefined;
    });
  }

  async function drain(accountId: string, w: AccountWorker): Promise<void> {
    let failures = 0;
    while (w.queue.length > 0 && !abort.signal.aborted) {
      const flush = w.queue[0] as AccountFlush<PendingEvent>;
      try {
        await runFlush(accountId, w, flush);
        w.queue.shift();
        failures = 0;
      } catch (err) {
        if (abort.signal.aborted) return;
        // Redis or Kafka trouble, not the events' fault: the flush runs again (the ledger makes that safe).
        log.error({ err, accountId }, 'CRM flush failed on infrastructure; retrying');
        try {
          await sleep(fullJitterDelayMs(failures++, INFRA_RETRY) + 100, undefined, { signal: abort.signal });
        } catch {
          return;
        }
      }
    }
  }

  /** The account's adapter for its current mapping's credential, or why there is none. */
  function adapterFor(accountId: string, w: AccountWorker): CrmAdapter | RecordFailure {
    const mapping = deps.mappings.currentMapping(accountId);
    if (!mapping) return { code: 'crm_mapping_missing', reason: 'the account has no CRM mapping any more' };
    const stored = deps.mappings.crmCredential(accountId, mapping.mapping.crm.credentialsRef);
    if (!stored) return { code: 'crm_credential_missing', reason: `no stored credential named ${mapping.mapping.crm.credentialsRef}` };
    if (stored.credential.type !== mapping.mapping.crm.type) {
      return {
        code: 'crm_credential_mismatch',
        reason: `credential ${stored.name} is for ${stored.credential.type}, the mapping is for ${mapping.mapping.crm.type}`,
      };
    }
    const ref = `${stored.name}@${stored.updatedAt}`;
    if (w.adapter?.ref !== ref) {
      if (w.adapter) void closeAdapter(w.adapter.adapter);
      w.adapter = { ref, adapter: deps.createAdapter(stored.credential) };
    }
    return w.adapter.adapter;
  }

  async function runFlush(accountId: string, w: AccountWorker, flush: AccountFlush<PendingEvent>): Promise<void> {
    const adapter = adapterFor(accountId, w);
    const failures =
      'code' in adapter
        ? new Map(flush.records.map((r) => [r, adapter]))
        : await executeFlush(accountId, flush.records, { adapter, limiter: w.limiter, store: deps.store, signal: abort.signal });

    const outcomes = new Map<PendingEvent, RecordFailure | undefined>();
    for (const rec of flush.records) {
      for (const { event } of rec.ops) if (!outcomes.has(event) || failures.has(rec)) outcomes.set(event, outcomes.get(event) ?? failures.get(rec));
      deps.metrics.coalesced.inc(Math.max(0, rec.ops.length - 1));
    }
    const failed = [...outcomes].filter((o): o is [PendingEvent, RecordFailure] => o[1] !== undefined);
    await deps.deadLetters.publish(
      failed.map(([e, f]) => ({ message: e.sink.message, code: f.code, reason: `account ${e.accountId} event ${e.eventId}: ${f.reason}` })),
    );
    await deps.syncStates.record(
      [...outcomes].map(([e, f]) =>
        f ? { accountId: e.accountId, eventId: e.eventId, state: 'failed', reason: f.reason } : { accountId: e.accountId, eventId: e.eventId, state: 'synced' },
      ),
    );
    const at = now();
    for (const [e, f] of outcomes) {
      deps.metrics.outcomes.inc({ state: f ? 'failed' : 'synced' });
      if (!f) deps.metrics.lag.observe(Math.max(0, at - e.sink.record.receivedAtMs) / 1000);
      e.sink.finish();
    }
    if (failed.length > 0)
      log.warn({ accountId, failed: failed.length, codes: [...new Set(failed.map(([, f]) => f.code))] }, 'CRM sync failed for some events; dead-lettered');
  }

  return {
    async submit(events) {
      const skipped: { event: SinkEvent; update: SyncStateUpdate }[] = [];
      const at = now();
      for (const event of events) {
        const { accountId, eventId } = event.record;
        const mapping = deps.mappings.currentMapping(accountId);
        const ops = mapping ? planSync(mapping.mapping, event.record) : [];
        if (ops.length === 0) {
          const reason = !mapping ? 'no_mapping' : event.record.email === null && event.record.domain === null ? 'missing_identity' : 'no_rule_matched';
          skipped.push({ event, update: { accountId, eventId, state: 'skipped', reason } });
          continue;
        }
        const pending: PendingEvent = { accountId, eventId, timestampMs: event.record.timestampMs, sink: event };
        for (const op of ops) coalescer.add(accountId, op, pending, at);
      }
      if (skipped.length > 0) {
        await deps.syncStates.record(skipped.map((s) => s.update));
        for (const s of skipped) {
          deps.metrics.outcomes.inc({ state: 'skipped' });
          s.event.finish();
        }
      }
      for (const flush of coalescer.takeDue(now())) enqueue(flush);
      schedule();
    },
    async stop() {
      abort.abort();
      if (timer) clearTimeout(timer);
      await Promise.allSettled([...workers.values()].map((w) => w.running));
      await Promise.allSettled([...workers.values()].map((w) => (w.adapter ? closeAdapter(w.adapter.adapter) : undefined)));
    },
  };
}
