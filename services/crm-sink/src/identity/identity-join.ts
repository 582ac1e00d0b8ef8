import type { EventRecord } from '@ingest/schemas';
import { type Component, type Logger, METRIC_NAMES, type Registry } from '@ingest/platform';
import { createEventRecordDecoder, type IdentityEntry, type IdentityMapIndex, joinedRecord, type PersonRef, personRef } from '@ingest/domain';
import { Counter } from 'prom-client';
import type { SinkEvent, SyncEngine } from '../sync/sync.engine.js';
import type { IdentityWaitStore } from './identity-wait.store.js';

/**
 * Late identify (docs/segment.md): an event that reaches the sink with a userId/anonymousId but
 * no email or domain (its identify came later, or on another partition) is looked up in the
 * identity map. Known: synced with that identity (`identitySource: "map"`). Unknown: it waits in
 * the wait store (its offset moves on) and is looked at again every poll until its person is
 * known or IDENTITY_WAIT_SECONDS have passed; then it goes to the engine as it is, which skips
 * it `identity_unresolved`. Each account has at most `maxPerAccount` waiting; beyond, an event is
 * skipped at once (counted, outcome `refused`).
 */
export interface IdentityJoinSettings {
  waitMs: number;
  maxPerAccount: number;
  pollMs: number;
  /** Events looked at per claim. */
  batch?: number;
}

export interface IdentityJoinDeps {
  engine: SyncEngine;
  index: IdentityMapIndex;
  waits: IdentityWaitStore;
  settings: IdentityJoinSettings;
  /** Erasure: an event joined to an erased identity is dropped. */
  erased?: (record: EventRecord) => boolean;
  metrics: Registry;
  logger: Logger;
  now?: () => number;
}

const LEASE_MS = 60_000;

const unresolved = (r: EventRecord) => r.email === null && r.domain === null && (r.userId !== undefined || r.anonymousId !== undefined);

export function createIdentityJoin(deps: IdentityJoinDeps): { engine: SyncEngine; poller: Component; resolveDue(): Promise<number> } {
  const now = deps.now ?? Date.now;
  const log = deps.logger.child({ component: 'identity-join' });
  const decode = createEventRecordDecoder();
  const outcomes = new Counter({
    name: METRIC_NAMES.identityWaits,
    help: 'Events without email/domain the CRM sink looked up in the identity map, by outcome (joined, waiting, resolved, expired, refused)',
    labelNames: ['outcome'],
    registers: [deps.metrics],
  });
  // Every outcome exported at 0 from the start, so rate() works from the first scrape.
  for (const outcome of ['joined', 'waiting', 'resolved', 'expired', 'refused']) outcomes.inc({ outcome }, 0);

  /** The map's email/domain for each record that needs one (two HMGETs per account). */
  async function join(records: readonly EventRecord[]): Promise<Map<EventRecord, EventRecord>> {
    const joined = new Map<EventRecord, EventRecord>();
    const byAccount = new Map<string, EventRecord[]>();
    for (const r of records) byAccount.set(r.accountId, [...(byAccount.get(r.accountId) ?? []), r]);
    for (const [accountId, list] of byAccount) {
      const refs = new Set<PersonRef>();
      for (const r of list) {
        const ref = personRef(r);
        if (ref) refs.add(ref);
        if (r.anonymousId !== undefined) refs.add(`a:${r.anonymousId}`);
      }
      const first = await deps.index.get(accountId, [...refs]);
      const users = [...first.values()].flatMap((e): PersonRef[] => (e.userId !== undefined ? [`u:${e.userId}`] : []));
      const known = new Map<PersonRef, IdentityEntry>([...first, ...(await deps.index.get(accountId, users))]);
      for (const r of list) {
        const enriched = joinedRecord(r, (ref) => known.get(ref));
        if (enriched) joined.set(r, enriched);
      }
    }
    return joined;
  }

  const engine: SyncEngine = {
    async submit(events) {
      const candidates = events.filter((e) => unresolved(e.record));
      if (candidates.length === 0 || deps.settings.waitMs <= 0) return deps.engine.submit(events);
      const joined = await join(candidates.map((e) => e.record));
      const forward: SinkEvent[] = [];
      for (const event of events) {
        const enriched = joined.get(event.record);
        if (enriched) {
          outcomes.inc({ outcome: 'joined' });
          if (deps.erased?.(enriched)) event.finish();
          else forward.push({ ...event, record: enriched });
        } else if (unresolved(event.record)) {
          const { accountId, eventId } = event.record;
          const added = await deps.waits.add(
            { accountId, eventId, message: event.message, deadlineMs: now() + deps.settings.waitMs },
            deps.settings.maxPerAccount,
          );
          outcomes.inc({ outcome: added ? 'waiting' : 'refused' });
          if (added) event.finish();
          else forward.push(event);
        } else forward.push(event);
      }
      await deps.engine.submit(forward);
    },
    resumeParked: (accountId, lease) => deps.engine.resumeParked(accountId, lease),
    stop: () => deps.engine.stop(),
  };

  /** One page of due waiting events: joined, expired, or looked at again next poll. */
  async function resolveDue(): Promise<number> {
    const at = now();
    const claimed = await deps.waits.claim(at, deps.settings.batch ?? 200, LEASE_MS);
    if (claimed.length === 0) return 0;
    const decoded = claimed.flatMap((w) => {
      const d = decode(w.message.value);
      return d.ok ? [{ waiting: w, record: d.record }] : [];
    });
    const joined = await join(decoded.map((d) => d.record));
    const forward: SinkEvent[] = [];
    for (const { waiting, record } of decoded) {
      const enriched = joined.get(record);
      const done = () =>
        void deps.waits
          .remove(waiting)
          .catch((err: unknown) => log.warn({ err, accountId: waiting.accountId }, 'removing a waiting event failed; it is looked at again'));
      if (enriched) {
        outcomes.inc({ outcome: 'resolved' });
        if (deps.erased?.(enriched)) done();
        else forward.push({ record: enriched, message: waiting.message, finish: done });
      } else if (waiting.deadlineMs <= at) {
        outcomes.inc({ outcome: 'expired' });
        forward.push({ record, message: waiting.message, finish: done });
      } else await deps.waits.later(waiting, at + deps.settings.pollMs);
    }
    for (const w of claimed) if (!decoded.some((d) => d.waiting === w)) await deps.waits.remove(w);
    await deps.engine.submit(forward);
    return claimed.length;
  }

  let timer: NodeJS.Timeout | undefined;
  let stopped = true;
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = (async () => {
      try {
        while (!stopped && (await resolveDue()) >= (deps.settings.batch ?? 200));
      } catch (err) {
        log.error({ err }, 'looking at waiting events failed; trying again next poll');
      }
      if (!stopped) timer = setTimeout(tick, deps.settings.pollMs);
    })();
  };
  const poller: Component = {
    name: 'identity-wait-poller',
    async start() {
      if (deps.settings.waitMs <= 0) return;
      stopped = false;
      timer = setTimeout(tick, deps.settings.pollMs);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
    },
    healthy: () => true,
  };
  return { engine, poller, resolveDue };
}
