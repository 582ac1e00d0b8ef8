import type { EventRecord } from '@ingest/schemas';
import { type ConsumedMessage, type DeadLetter, METRIC_NAMES, type OutgoingMessage, type Registry } from '@ingest/platform';
import {
  createEventRecordDecoder,
  IDENTITY_HEADER,
  type IdentityEntry,
  type IdentityMapBuilder,
  type IdentityMapIndex,
  identityTopicMessages,
  joinedRecord,
  linksOf,
  type PersonRef,
  refsToLookUp,
} from '@ingest/domain';
import { Counter } from 'prom-client';

/**
 * The identity map's part of dedupe (docs/segment.md, "Whom an event is about"): each first-seen
 * Segment message (identity header `u:`/`a:`) teaches the map what it says (identify, group,
 * alias) and, when it has no email or domain of its own, gets the ones the map knows.
 *
 * Per batch: `prepare` reads every entry the batch's Segment messages may need in two HMGETs per
 * account (the people, then the users their anonymous ids are linked to); `apply` runs in
 * message order over those entries plus the batch's own writes, so an identify and a track of
 * the same batch are joined; the writes go to the `identities` topic in the same produce request
 * as events.unique, and to the Redis index once that is durable (`commit`).
 */
export interface IdentityStepDeps {
  index: IdentityMapIndex;
  builder: IdentityMapBuilder;
  topic: string;
  metrics: Registry;
  now?: () => number;
}

export interface IdentityBatch {
  /** The value to pass on for a first-seen message (the joined record, or the message's own value). */
  apply(message: ConsumedMessage): Buffer | string;
  /** The batch's map writes, for the produce request of events.unique. */
  records(): OutgoingMessage[];
  /** Aliases refused as merging two known people: dead letters `identity_conflict` (the events are still stored). */
  conflicts(): DeadLetter[];
  /** Applies the writes to the Redis index; call once the records are durable. */
  commit(): Promise<void>;
}

const isSegment = (message: ConsumedMessage) => {
  const identity = message.headers[IDENTITY_HEADER];
  return identity === undefined || identity.startsWith('u:') || identity.startsWith('a:');
};

export function createIdentityStep(deps: IdentityStepDeps) {
  const now = deps.now ?? Date.now;
  const decode = createEventRecordDecoder();
  const links = new Counter({ name: METRIC_NAMES.identityLinks, help: 'Identity map entries written (identify, group, alias)', registers: [deps.metrics] });
  const joined = new Counter({ name: METRIC_NAMES.identityJoined, help: 'Events given an email or domain by the identity map', registers: [deps.metrics] });
  const conflictsCount = new Counter({
    name: METRIC_NAMES.identityConflicts,
    help: 'Aliases refused because they would merge two people known under different emails',
    registers: [deps.metrics],
  });

  return {
    async prepare(messages: readonly ConsumedMessage[]): Promise<IdentityBatch> {
      const records = new Map<ConsumedMessage, EventRecord>();
      const refsByAccount = new Map<string, Set<PersonRef>>();
      for (const message of messages) {
        if (!isSegment(message)) continue;
        const decoded = decode(message.value);
        if (!decoded.ok || (decoded.record.userId === undefined && decoded.record.anonymousId === undefined)) continue;
        records.set(message, decoded.record);
        const refs = refsByAccount.get(decoded.record.accountId) ?? new Set<PersonRef>();
        for (const ref of refsToLookUp(decoded.record)) refs.add(ref);
        refsByAccount.set(decoded.record.accountId, refs);
      }
      const known = new Map<string, IdentityEntry>();
      if (records.size > 0) await deps.builder.ensureBuilt();
      for (const [accountId, refs] of refsByAccount) {
        const first = await deps.index.get(accountId, [...refs]);
        const users = [...first.values()].flatMap((e): PersonRef[] => (e.userId !== undefined && !refs.has(`u:${e.userId}`) ? [`u:${e.userId}`] : []));
        const second = await deps.index.get(accountId, users);
        for (const [ref, entry] of [...first, ...second]) known.set(`${accountId}\n${ref}`, entry);
      }

      const writes = new Map<string, [PersonRef, IdentityEntry][]>();
      const refused: DeadLetter[] = [];
      return {
        apply(message) {
          const record = records.get(message);
          if (!record) return message.value ?? '';
          const lookUp = (ref: PersonRef) => known.get(`${record.accountId}\n${ref}`);
          const learnt = linksOf(record, lookUp, now());
          for (const [ref, entry] of learnt.writes) {
            known.set(`${record.accountId}\n${ref}`, entry);
            writes.set(record.accountId, [...(writes.get(record.accountId) ?? []), [ref, entry]]);
          }
          if (learnt.conflict)
            refused.push({ message, code: 'identity_conflict', reason: `account ${record.accountId} event ${record.eventId}: ${learnt.conflict}` });
          const enriched = joinedRecord(record, lookUp);
          if (!enriched) return message.value ?? '';
          joined.inc();
          return JSON.stringify(enriched);
        },
        records: () => [...writes].flatMap(([accountId, entries]) => identityTopicMessages(accountId, entries)),
        conflicts: () => refused,
        async commit() {
          for (const [accountId, entries] of writes) {
            await deps.index.put(accountId, entries);
            links.inc(entries.length);
          }
          conflictsCount.inc(refused.length);
        },
      };
    },
  };
}

export type IdentityStep = ReturnType<typeof createIdentityStep>;
