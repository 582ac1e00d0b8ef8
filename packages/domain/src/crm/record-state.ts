import type { PlannedOperation } from './mapping.plan.js';
import type { CrmObject, PropertyValue, RecordWrite } from './crm-writes.js';

/**
 * The sink's own state of one CRM record, a Redis hash (see record-state.store.ts), and the pure
 * functions around it. Fields are stored by kind:
 * - `n:<field>`: the number of an increment/max/min field, as decimal text;
 * - `l:<field>`: the JSON array of an append field;
 * - `o:<field>`: a setOnce field, `{"v":value}` when an event set it, `{"crm":1}` when the CRM
 *   already had a value the first time the sink looked (then the sink never writes it);
 * - `t:<field>`: a set field's version, `<event time ms>|<eventId>` of the set that last won: a
 *   set older than it (late, or replayed from dead letters) is not written (last writer wins by
 *   event time, ties broken by eventId in byte order, so arrival order does not matter).
 * The CRM receives absolute values computed from this state, so repeating a write changes
 * nothing. A field is seeded from the CRM's current value the first time the sink touches it.
 */
export type RecordState = Record<string, string>;

/** `kind, field, value` triples: the argument list of the apply script. */
export type StateDelta = string[];

export function stateFieldsOf(op: PlannedOperation): string[] {
  return [
    ...Object.keys(op.increment).map((f) => `n:${f}`),
    ...Object.keys(op.max).map((f) => `n:${f}`),
    ...Object.keys(op.min).map((f) => `n:${f}`),
    ...Object.keys(op.append).map((f) => `l:${f}`),
    ...Object.keys(op.setOnce).map((f) => `o:${f}`),
  ];
}

export function crmFieldOf(stateField: string): string {
  return stateField.slice(2);
}

/** The record's key as the CRM knows it: the email of a contact, the domain of a company. */
export function recordKeyOf(op: PlannedOperation): string {
  return 'email' in op.key ? op.key.email : op.key.domain;
}

/** Lists travel to CRMs as `;`-separated text (HubSpot multiple checkboxes, Salesforce multi-select picklists). */
export const LIST_SEPARATOR = ';';

/** A CRM value as a number: numbers as they are, numeric text, ISO 8601 date-times as epoch ms. */
export function numberFromCrm(value: PropertyValue | undefined): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value !== 'string' || value.trim() === '') return undefined;
  const n = Number(value);
  if (Number.isFinite(n)) return n;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}

function isEmpty(value: PropertyValue | undefined): boolean {
  return value === undefined || value === null || value === '';
}

/** Seeds for the state fields that are absent, from the CRM's current values; absent when the CRM has nothing usable. */
export function seedsFromCrm(missing: readonly string[], current: Record<string, PropertyValue> | undefined): StateDelta {
  const delta: StateDelta = [];
  for (const stateField of missing) {
    const value = current?.[crmFieldOf(stateField)];
    if (stateField.startsWith('n:')) {
      const n = numberFromCrm(value);
      if (n !== undefined) delta.push('seed', stateField, String(n));
    } else if (stateField.startsWith('l:')) {
      if (!isEmpty(value)) {
        const items = String(value)
          .split(LIST_SEPARATOR)
          .filter((s) => s !== '');
        delta.push('seed', stateField, JSON.stringify(items));
      }
    } else if (!isEmpty(value)) {
      delta.push('seed', stateField, '{"crm":1}');
    }
  }
  return delta;
}

/** A set's version: the event's time, then its id (the tie-break). */
export function setVersion(timestampMs: number, eventId: string): string {
  return `${timestampMs}|${eventId}`;
}

/** The `t:` fields of an operation's sets: read and compared, never seeded from the CRM. */
export function setVersionFieldsOf(op: PlannedOperation): string[] {
  return Object.keys(op.set).map((f) => `t:${f}`);
}

/** Each set field with the event's version; the apply script keeps the newest per field. */
export function setDeltaOf(op: PlannedOperation, version: string): StateDelta {
  return Object.keys(op.set).flatMap((f) => ['set', `t:${f}`, version]);
}

/** Byte order of the UTF-8 encodings, as the apply script compares. */
function bytewiseBefore(a: string, b: string): boolean {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')) < 0;
}

/** Whether a set with `version` wins over the stored version (absent: it wins). */
export function setWins(stored: string | undefined, version: string): boolean {
  if (stored === undefined) return true;
  const split = (tag: string): [number, string] => {
    const at = tag.indexOf('|');
    return [Number(tag.slice(0, at)), tag.slice(at + 1)];
  };
  const [sts, sid] = split(stored);
  const [vts, vid] = split(version);
  if (!Number.isFinite(sts) || vts > sts) return true;
  return vts === sts && !bytewiseBefore(vid, sid);
}

/** The non-idempotent part of one event-rule, applied once per ledger key. */
export function deltaOf(op: PlannedOperation): StateDelta {
  const delta: StateDelta = [];
  for (const [f, by] of Object.entries(op.increment)) delta.push('inc', `n:${f}`, String(by));
  for (const [f, v] of Object.entries(op.max)) delta.push('max', `n:${f}`, String(v));
  for (const [f, v] of Object.entries(op.min)) delta.push('min', `n:${f}`, String(v));
  for (const [f, values] of Object.entries(op.append)) for (const v of values) delta.push('app', `l:${f}`, JSON.stringify(v));
  for (const [f, v] of Object.entries(op.setOnce)) delta.push('once', `o:${f}`, JSON.stringify({ v }));
  return delta;
}

export function toPropertyValue(value: unknown): PropertyValue {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  return value === undefined ? null : JSON.stringify(value);
}

function listText(items: unknown[]): string {
  return items.map((v) => (typeof v === 'string' ? v : JSON.stringify(v))).join(LIST_SEPARATOR);
}

/** The value a state field gives the CRM, or undefined when the sink must not write it. */
function stateValue(stateField: string, raw: string | undefined): PropertyValue | undefined {
  if (raw === undefined) return undefined;
  if (stateField.startsWith('n:')) return Number(raw);
  if (stateField.startsWith('l:')) {
    const items = JSON.parse(raw) as unknown;
    return listText(Array.isArray(items) ? items : []);
  }
  const once = JSON.parse(raw) as { v?: unknown; crm?: 1 };
  return 'v' in once ? toPropertyValue(once.v) : undefined;
}

/** An operation with the version of its event (setVersion), which decides whether its sets are written. */
export interface VersionedOperation {
  op: PlannedOperation;
  version: string;
}

/**
 * One upsert for a record: each set field with the value of the operation whose version the
 * state kept (the newest by event time; an older set is left out), and each state field the
 * operations touched with its absolute value from `state` (the hash after every operation applied).
 */
export function buildRecordWrite(object: CrmObject, key: string, ops: readonly VersionedOperation[], state: RecordState): RecordWrite {
  const properties: Record<string, PropertyValue> = {};
  for (const { op, version } of ops) {
    for (const [f, v] of Object.entries(op.set)) if (state[`t:${f}`] === version) properties[f] = toPropertyValue(v);
    for (const stateField of stateFieldsOf(op)) {
      const value = stateValue(stateField, state[stateField]);
      const field = crmFieldOf(stateField);
      if (value !== undefined) properties[field] = value;
      else if (stateField.startsWith('o:')) delete properties[field];
    }
  }
  return { object, key, properties };
}

/**
 * What the sink's apply script (crm-sink record-state.store.ts, Lua in Redis) makes of `state`
 * for one event-rule whose ledger key is not set yet: seeds and setOnce values only where the
 * field is absent, increments, max/min, list items spliced in as JSON text. For the dry-run,
 * which must not write. Numbers are kept as JS text rather than Lua's %.17g; both parse to the
 * same double, and the CRM only ever sees the parsed number (buildRecordWrite).
 */
export function simulateApply(state: RecordState, seeds: StateDelta, delta: StateDelta): RecordState {
  const next: RecordState = { ...state };
  const args = [...seeds, ...delta];
  // Lua's tonumber: nil for anything that is not a number (the script never stores such text).
  const num = (raw: string | undefined) => (raw === undefined || raw.trim() === '' || !Number.isFinite(Number(raw)) ? undefined : Number(raw));
  for (let i = 0; i + 2 < args.length; i += 3) {
    const kind = args[i] as string;
    const field = args[i + 1] as string;
    const value = args[i + 2] as string;
    if (kind === 'set') {
      if (setWins(next[field], value)) next[field] = value;
    } else if (kind === 'seed' || kind === 'once') {
      if (!Object.hasOwn(next, field)) next[field] = value;
    } else if (kind === 'inc') {
      next[field] = String((num(next[field]) ?? 0) + Number(value));
    } else if (kind === 'max' || kind === 'min') {
      const current = num(next[field]);
      const v = Number(value);
      if (current === undefined || (kind === 'max' && v > current) || (kind === 'min' && v < current)) next[field] = String(v);
    } else if (kind === 'app') {
      const list = next[field];
      next[field] = list === undefined || list === '[]' ? `[${value}]` : `${list.slice(0, -1)},${value}]`;
    }
  }
  return next;
}
