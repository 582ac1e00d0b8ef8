import type { CrmType } from '../control-plane/types.js';
import type { ContactCompanyLink } from './crm-links.js';
import { type ActivityWrite, CrmError, type CrmObject, type CrmRequest } from './crm-writes.js';
import { ledgerKey, type PlannedOperation } from './mapping.plan.js';
import {
  buildRecordWrite,
  crmFieldOf,
  deltaOf,
  type RecordState,
  recordKeyOf,
  seedsFromCrm,
  setDeltaOf,
  setVersion,
  setVersionFieldsOf,
  simulateApply,
  stateFieldsOf,
} from './record-state.js';
import type { RecordStateReader } from './record-state.reader.js';
import type { CrmRequestPlanner } from './request-planner.js';

/**
 * The CRM calls the sink would make for one event, given the account's current sink state in
 * Redis, without writing anything (the dry-run). It walks the sink's flush (crm-sink
 * flush.executor.ts) for a flush holding this event alone, step by step with the same pure
 * pieces: per object (contacts, then companies) the CRM read of state fields the sink has never
 * held, each event-rule's delta unless its ledger key is set (simulateApply mirrors the Lua
 * script), the upsert of absolute values, then the activities not created yet.
 * What cannot be known without calling the CRM is stated in `notes`, never guessed silently.
 */
export type SyncPreviewNoteCode =
  /** The sink reads these fields from the CRM first (the `read` call); the values shown assume the CRM has none. */
  | 'crm_values_assumed_empty'
  /** The event-rule's ledger key is set: its increment/max/min/append/setOnce is not applied again. */
  | 'already_applied'
  /** A newer event (by event time) set these fields already: this event's older values are not written. */
  | 'older_set_ignored'
  /** The event-rule's activity was created already: not created again. */
  | 'activity_already_created'
  /** HubSpot note associations name the record id the upsert before them returns. */
  | 'record_id_placeholder'
  /** The contact-company link reads both records' ids first and links only when both exist; the ids are placeholders. */
  | 'link_ids_looked_up'
  /** The adapter refuses the write before any call (e.g. a field that is no Salesforce API name): the sink dead-letters the event. */
  | 'record_refused'
  /** Webhook `sentAt` is the time of sending; the dry-run shows its own time. */
  | 'sent_at_is_send_time';

export interface SyncPreviewNote {
  code: SyncPreviewNoteCode | 'credential_missing' | 'credential_mismatch';
  message: string;
  object?: CrmObject;
  key?: string;
  ruleId?: string;
  fields?: string[];
}

export interface SyncPreview {
  calls: CrmRequest[];
  notes: SyncPreviewNote[];
}

export interface SyncPreviewInput {
  accountId: string;
  eventId: string;
  /** The event's time: its sets are shown only where they are not older than the field's last set. */
  timestampMs: number;
  crmType: CrmType;
  /** planSync's operations for the event, in mapping order. */
  operations: readonly PlannedOperation[];
  planner: CrmRequestPlanner;
  reader: RecordStateReader;
  /** plannedLink's answer for the event: the contact-company link the sink makes after the records (crm-links.ts). */
  link?: ContactCompanyLink;
}

const OBJECTS: readonly CrmObject[] = ['contact', 'company'];

/** A builder's refusal becomes a note; anything else is a bug and propagates. */
function attempt<T>(build: () => T, onRefused: (err: CrmError) => void): T | undefined {
  try {
    return build();
  } catch (err) {
    if (!(err instanceof CrmError)) throw err;
    onRefused(err);
    return undefined;
  }
}

export async function previewSync(input: SyncPreviewInput): Promise<SyncPreview> {
  const { accountId, eventId, planner, reader } = input;
  const calls: CrmRequest[] = [];
  const notes: SyncPreviewNote[] = [];

  for (const object of OBJECTS) {
    // One event has one key per object (its email or its domain); the coalescer groups the same way.
    const records = new Map<string, PlannedOperation[]>();
    for (const op of input.operations) if (op.object === object) records.set(recordKeyOf(op), [...(records.get(recordKeyOf(op)) ?? []), op]);

    for (const [key, ops] of records) {
      const refused = (err: CrmError) =>
        notes.push({ code: 'record_refused', object, key, message: `${err.message}; the sink dead-letters the event (crm_permanent)` });

      // 1. State fields the sink has never held are read from the CRM and seeded from its values.
      const needed = [...new Set(ops.flatMap((op) => stateFieldsOf(op)))];
      const versions = [...new Set(ops.flatMap((op) => setVersionFieldsOf(op)))];
      let state: RecordState = await reader.values(accountId, object, key, [...needed, ...versions]);
      const missing = needed.filter((f) => !Object.hasOwn(state, f));
      if (missing.length > 0) {
        const fields = [...new Set(missing.map(crmFieldOf))];
        const reads = attempt(() => planner.read(object, [key], fields), refused);
        if (reads === undefined) continue;
        calls.push(...reads);
        if (reads.length > 0)
          notes.push({
            code: 'crm_values_assumed_empty',
            object,
            key,
            fields,
            message: `the sink first reads ${fields.join(', ')} from the CRM and continues from its values; shown as if the CRM had none`,
          });
      }

      // 2. Each event-rule once: a set ledger key means the sink applies nothing again.
      const seeds = seedsFromCrm(missing, undefined);
      const ledgerKeys = ops.map((op) => ledgerKey(accountId, eventId, op.ruleId));
      const applied = await reader.applied(ledgerKeys);
      const version = setVersion(input.timestampMs, eventId);
      ops.forEach((op, i) => {
        // Sets are compared by event time whether or not the event was applied before.
        state = simulateApply(state, [], setDeltaOf(op, version));
        const older = Object.keys(op.set).filter((f) => state[`t:${f}`] !== version);
        if (older.length > 0)
          notes.push({
            code: 'older_set_ignored',
            object,
            key,
            ruleId: op.ruleId,
            fields: older,
            message: `a newer event set ${older.join(', ')} already: this older event's value is not written`,
          });
        const delta = deltaOf(op);
        if (delta.length === 0) return;
        if (!applied.has(ledgerKeys[i] as string)) {
          state = simulateApply(state, seeds, delta);
          return;
        }
        notes.push({
          code: 'already_applied',
          object,
          key,
          ruleId: op.ruleId,
          fields: stateFieldsOf(op).map(crmFieldOf),
          message: `event ${eventId} was applied by rule ${op.ruleId} already: its increment, max, min, append and setOnce are not applied again`,
        });
      });

      // 3. The absolute values.
      const write = buildRecordWrite(
        object,
        key,
        ops.map((op) => ({ op, version })),
        state,
      );
      const upserts = attempt(() => planner.upsert(object, [write]), refused);
      if (upserts === undefined) continue;
      calls.push(...upserts);

      // 4. Activities not created before.
      const activities: ActivityWrite[] = [];
      const done = await reader.activitiesDone(ledgerKeys.filter((_, i) => ops[i]?.activity !== undefined));
      ops.forEach((op, i) => {
        const idempotencyKey = ledgerKeys[i] as string;
        if (!op.activity || activities.some((a) => a.idempotencyKey === idempotencyKey)) return;
        if (done.has(idempotencyKey)) {
          notes.push({
            code: 'activity_already_created',
            object,
            key,
            ruleId: op.ruleId,
            message: `the activity of rule ${op.ruleId} for event ${eventId} exists already`,
          });
          return;
        }
        activities.push({ object, key, ...op.activity, idempotencyKey });
      });
      if (activities.length === 0) continue;
      const creates = attempt(() => planner.createActivities(activities), refused);
      if (creates === undefined) continue;
      calls.push(...creates);
      if (input.crmType === 'hubspot')
        notes.push({
          code: 'record_id_placeholder',
          object,
          key,
          message: `the note is associated with the id HubSpot returns for ${object} ${key}, shown as a placeholder`,
        });
    }
  }
  // 5. The event's contact linked to its company, and the contacts that waited for the company
  // the event writes (the sink's flush.executor linkContacts), unless the sink dead-letters the event before.
  if (!notes.some((n) => n.code === 'record_refused')) {
    const own = input.link;
    const companies = [...new Set(input.operations.filter((op) => op.object === 'company').map(recordKeyOf))];
    const waiting = ((await reader.waitingLinks?.(accountId, companies)) ?? []).filter((l) => l.email.toLowerCase() !== own?.email.toLowerCase());
    const links = [...(own ? [own] : []), ...waiting];
    const linkCalls = links.length > 0 ? input.planner.link(links) : [];
    if (linkCalls.length > 0) {
      calls.push(...linkCalls);
      const who = links.map((l) => `${l.email} → ${l.domain}`).join(', ');
      notes.push({
        code: 'link_ids_looked_up',
        object: 'contact',
        ...(own ? { key: own.email } : {}),
        message: `contacts are linked to companies once both exist in the CRM (${who}): their ids are read first (placeholders here); a company that does not exist yet is waited for`,
      });
    }
  }
  if (input.crmType === 'webhook' && calls.length > 0)
    notes.push({ code: 'sent_at_is_send_time', message: 'sentAt is set (and the payload signed) when the sink sends; shown with the time of the dry-run' });
  return { calls, notes };
}
