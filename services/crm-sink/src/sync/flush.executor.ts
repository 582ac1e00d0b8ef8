import { buildRecordWrite, crmFieldOf, deltaOf, ledgerKey, newestLinks, seedsFromCrm, setDeltaOf, setVersion, stateFieldsOf } from '@ingest/domain';
import type { ActivityWrite, ContactCompanyLink, CrmAdapter, CrmObject, PropertyValue, RecordWrite } from '../adapters/adapter.js';
import { type AccountCaller, CrmCallFailed } from '../retry/crm-call.retry.js';
import type { RecordBuffer } from './coalescer.js';
import type { PendingLinksStore } from './pending-links.store.js';
import type { RecordStateStore } from './record-state.store.js';

/**
 * Applies one account's coalesced records: seeds state fields seen for the first time from the
 * CRM (one read per batch of records), applies each event-rule once through the ledger, upserts
 * the absolute values in batches of the adapter's size, then creates the activities not created
 * before. Returns why records failed; throws only for infrastructure failures (Redis) and the
 * abort of a stopping sink, after which the whole flush may run again safely.
 */
export interface FlushEvent {
  accountId: string;
  eventId: string;
  /** The event's time: a set older than the one a field last took is not written. */
  timestampMs: number;
  /** The contact-company link the event asks for (plannedLink), made after the records are written. */
  link?: ContactCompanyLink;
}

export interface RecordFailure {
  code: string;
  reason: string;
}

export interface FlushDeps {
  adapter: CrmAdapter;
  caller: AccountCaller;
  store: RecordStateStore;
  signal: AbortSignal;
  /** Links waiting for their company; without it a link whose company is missing waits for the next event naming both. */
  pendingLinks?: PendingLinksStore;
}

const OBJECTS: readonly CrmObject[] = ['contact', 'company'];

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

async function guarded<T>(work: () => Promise<T>, onFailure: (f: RecordFailure) => void): Promise<T | undefined> {
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof CrmCallFailed)) throw err;
    onFailure({ code: err.code, reason: err.message });
    return undefined;
  }
}

/** Failures per record (`object\0key`); records not listed were synced. */
export async function executeFlush<E extends FlushEvent>(
  accountId: string,
  records: readonly RecordBuffer<E>[],
  deps: FlushDeps,
): Promise<Map<RecordBuffer<E>, RecordFailure>> {
  const failures = new Map<RecordBuffer<E>, RecordFailure>();
  const { adapter, caller, store, signal } = deps;
  const size = Math.max(1, adapter.maxBatchSize);

  for (const object of OBJECTS) {
    const recs = records.filter((r) => r.object === object);
    if (recs.length === 0) continue;

    // 1. Which owned fields this sink has never held for each record: those are read from the CRM.
    const missing = new Map<RecordBuffer<E>, string[]>();
    for (const rec of recs) {
      const needed = [...new Set(rec.ops.flatMap(({ op }) => stateFieldsOf(op)))];
      const present = await store.present(accountId, object, rec.key, needed);
      const absent = needed.filter((f) => !present.has(f));
      if (absent.length > 0) missing.set(rec, absent);
    }
    const current = new Map<string, Record<string, PropertyValue>>();
    for (const batch of chunks([...missing.keys()], size)) {
      const fields = [...new Set(batch.flatMap((r) => (missing.get(r) ?? []).map(crmFieldOf)))];
      const read = await guarded(
        () =>
          caller.call(
            (callSignal) =>
              adapter.read(
                object,
                batch.map((r) => r.key),
                fields,
                callSignal,
              ),
            signal,
          ),
        (f) => batch.forEach((r) => failures.set(r, f)),
      );
      for (const [key, values] of read ?? []) current.set(key, values);
    }

    // 2. Each event-rule once (ledger), in event order, and each set by event time; the last state is the record's.
    const writes = new Map<RecordBuffer<E>, RecordWrite>();
    for (const rec of recs) {
      if (failures.has(rec)) continue;
      const seeds = seedsFromCrm(missing.get(rec) ?? [], current.get(rec.key));
      let state: Record<string, string> = {};
      const versioned = rec.ops.map(({ op, event }) => ({ op, version: setVersion(event.timestampMs, event.eventId) }));
      for (const [i, { op, version }] of versioned.entries()) {
        const delta = [...setDeltaOf(op, version), ...deltaOf(op)];
        if (delta.length === 0) continue;
        const event = (rec.ops[i] as { event: E }).event;
        state = (await store.apply(accountId, object, rec.key, ledgerKey(accountId, event.eventId, op.ruleId), seeds, delta)).state;
      }
      writes.set(rec, buildRecordWrite(object, rec.key, versioned, state));
    }

    // 3. Absolute values: repeating this after a crash or a replay changes nothing.
    for (const batch of chunks([...writes.keys()], size)) {
      const result = await guarded(
        () =>
          caller.call(
            (callSignal) =>
              adapter.upsert(
                object,
                batch.map((r) => writes.get(r) as RecordWrite),
                callSignal,
              ),
            signal,
          ),
        (f) => batch.forEach((r) => failures.set(r, f)),
      );
      for (const failure of result?.failures ?? []) {
        const rec = batch.find((r) => r.key === failure.key);
        if (rec) failures.set(rec, { code: 'crm_record_rejected', reason: failure.message });
      }
    }

    // 4. Activities, each once: the ledger key is their idempotency key, and created ones are marked.
    const activities: { rec: RecordBuffer<E>; write: ActivityWrite }[] = [];
    const planned = new Set<string>();
    for (const rec of recs) {
      if (failures.has(rec)) continue;
      for (const { op, event } of rec.ops) {
        const idempotencyKey = ledgerKey(accountId, event.eventId, op.ruleId);
        // The same event twice in one flush (a replay meeting its redelivery) is one activity.
        if (!op.activity || planned.has(idempotencyKey)) continue;
        planned.add(idempotencyKey);
        activities.push({ rec, write: { object, key: rec.key, ...op.activity, idempotencyKey } });
      }
    }
    const done = await store.activitiesDone(activities.map((a) => a.write.idempotencyKey));
    for (const batch of chunks(
      activities.filter((a) => !done.has(a.write.idempotencyKey)),
      size,
    )) {
      const result = await guarded(
        () =>
          caller.call(
            (callSignal) =>
              adapter.createActivities(
                batch.map((a) => a.write),
                callSignal,
              ),
            signal,
          ),
        (f) => batch.forEach((a) => failures.set(a.rec, f)),
      );
      if (!result) continue;
      const refused = new Set<string>();
      for (const failure of result.failures) {
        refused.add(failure.key);
        const item = batch.find((a) => a.write.idempotencyKey === failure.key || a.write.key === failure.key);
        if (item) failures.set(item.rec, { code: 'crm_record_rejected', reason: failure.message });
      }
      await store.markActivitiesDone(batch.filter((a) => !refused.has(a.write.idempotencyKey) && !refused.has(a.write.key)).map((a) => a.write.idempotencyKey));
    }
  }
  await linkContacts(accountId, records, failures, deps);
  return failures;
}

/**
 * 5. Contacts linked to companies, after both kinds of record were written (so a company created
 * in this flush is found): one link per contact, the newest event's, plus the links that waited
 * for a company written now (pending-links.store.ts). A link whose events failed already is left
 * to their replay. A failed link fails the records of the events that asked for it (dead-lettered,
 * replayable: linking again changes nothing); a waiting link that fails stays waiting. A link
 * whose company does not exist yet waits for it.
 */
async function linkContacts<E extends FlushEvent>(
  accountId: string,
  records: readonly RecordBuffer<E>[],
  failures: Map<RecordBuffer<E>, RecordFailure>,
  deps: FlushDeps,
): Promise<void> {
  const { adapter, caller, signal, pendingLinks } = deps;
  if (!adapter.link) return;
  const asking = new Map<string, RecordBuffer<E>[]>();
  const wanted: { link: ContactCompanyLink; timestampMs: number; eventId: string }[] = [];
  for (const rec of records) {
    for (const { event } of rec.ops) {
      if (!event.link) continue;
      const email = event.link.email.toLowerCase();
      asking.set(email, [...new Set([...(asking.get(email) ?? []), rec])]);
      wanted.push({ link: event.link, timestampMs: event.timestampMs, eventId: event.eventId });
    }
  }
  const links = newestLinks(wanted).filter((l) => !(asking.get(l.email.toLowerCase()) ?? []).some((r) => failures.has(r)));
  const written = records.filter((r) => r.object === 'company' && !failures.has(r)).map((r) => r.key);
  // An event's own link is newer than one that waited: the waiting one is dropped.
  const waiting = (pendingLinks ? await pendingLinks.waiting(accountId, written) : []).filter((l) => !asking.has(l.email.toLowerCase()));
  const fail = (email: string, f: RecordFailure) => (asking.get(email.toLowerCase()) ?? []).forEach((r) => failures.set(r, f));
  for (const batch of chunks([...links, ...waiting], Math.max(1, adapter.maxBatchSize))) {
    const link = adapter.link.bind(adapter);
    const result = await guarded(
      () => caller.call((callSignal) => link(batch, callSignal), signal),
      (f) => batch.forEach((l) => fail(l.email, f)),
    );
    if (!result) continue;
    for (const failure of result.failures) fail(failure.key, { code: 'crm_record_rejected', reason: `linking to its company: ${failure.message}` });
    await pendingLinks?.remove(
      accountId,
      waiting.filter((l) => batch.includes(l)),
    );
    await pendingLinks?.add(accountId, result.missing);
  }
}
