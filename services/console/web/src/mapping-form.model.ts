/**
 * The rules form's view of a mapping document: it reads the JSON the owner (or the form) wrote
 * and writes every edit back as JSON, so the form and the JSON view are one document. Parts the
 * form does not show (conditions, activities, links) pass through untouched.
 */
export const OPS = ['set', 'setOnce', 'increment', 'max', 'min', 'append'] as const;
export const SOURCES = ['event', 'property', 'constant', 'template'] as const;
export const EVENT_FIELDS = ['eventName', 'email', 'domain', 'timestamp', 'eventId'] as const;
export type Source = (typeof SOURCES)[number];

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface FormAction {
  op: string;
  field: string;
  source: Source;
  /** The source's value as typed: an event field, a property key, a constant, a template. */
  value: string;
}
export interface FormRule {
  id: string;
  eventName: string;
  object: string;
  actions: FormAction[];
}

/** The document as the form shows it, or why it cannot (then only the JSON view edits it). */
export function readForm(text: string): { ok: true; doc: Json; rules: FormRule[] } | { ok: false; reason: string } {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return { ok: false, reason: 'The JSON is not valid: fix it in the JSON view to edit it here.' };
  }
  if (!isObject(doc) || !Array.isArray(doc.rules) || !doc.rules.every(isObject))
    return { ok: false, reason: 'The document has no list of rules: fix it in the JSON view to edit it here.' };
  const rules = (doc.rules as Json[]).map((r) => {
    const when = isObject(r.when) ? r.when : {};
    const eventName = Array.isArray(when.eventName) ? when.eventName.join(', ') : typeof when.eventName === 'string' ? when.eventName : '';
    const actions = (Array.isArray(r.actions) ? r.actions : []).filter(isObject).map(readAction);
    return { id: String(r.id ?? ''), eventName, object: String(r.object ?? 'contact'), actions };
  });
  return { ok: true, doc, rules };
}

function readAction(a: Json): FormAction {
  const from = isObject(a.from) ? a.from : {};
  const source = SOURCES.find((s) => s in from) ?? 'property';
  const raw = from[source];
  const value = source === 'constant' ? showConstant(raw) : typeof raw === 'string' ? raw : '';
  return { op: String(a.op ?? 'set'), field: String(a.field ?? ''), source, value: a.op === 'increment' ? String(a.by ?? '') : value };
}

// Text that would read back as another type is shown quoted, so what is shown reads back the same.
function showConstant(v: unknown): string {
  if (typeof v !== 'string') return v === undefined ? '' : JSON.stringify(v);
  return /^\s*(-?\d|true\b|false\b|null\b|")/.test(v) ? JSON.stringify(v) : v;
}

function parseConstant(text: string): unknown {
  try {
    const v: unknown = JSON.parse(text);
    if (typeof v === 'number' || typeof v === 'boolean' || v === null || typeof v === 'string') return v;
  } catch {
    // Plain text: a string constant.
  }
  return text;
}

function writeAction(a: FormAction): Json {
  if (a.op === 'increment') {
    const by = Number(a.value);
    return { op: a.op, field: a.field, ...(a.value.trim() !== '' && Number.isFinite(by) ? { by } : {}) };
  }
  return { op: a.op, field: a.field, from: { [a.source]: a.source === 'constant' ? parseConstant(a.value) : a.value } };
}

/** The document with the form's rules written into it (as pretty JSON); everything else kept. */
export function writeForm(doc: Json, rules: FormRule[]): string {
  const old = Array.isArray(doc.rules) ? (doc.rules as Json[]) : [];
  const next = rules.map((rule, i) => {
    const before = old[i] ?? {};
    const when = isObject(before.when) ? before.when : {};
    const names = rule.eventName
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n !== '');
    return {
      ...before,
      id: rule.id,
      when: { ...when, eventName: names.length > 1 ? names : (names[0] ?? '') },
      object: rule.object,
      actions: rule.actions.map(writeAction),
    };
  });
  return JSON.stringify({ ...doc, rules: next }, null, 2);
}

export const newAction = (): FormAction => ({ op: 'set', field: '', source: 'property', value: '' });
export const newRule = (n: number): FormRule => ({ id: `rule-${n}`, eventName: '', object: 'contact', actions: [newAction()] });

/** Removing a rule removes its hidden parts (conditions, activity) with it, not a neighbour's. */
export function removeRule(doc: Json, rules: FormRule[], index: number): string {
  const old = Array.isArray(doc.rules) ? (doc.rules as Json[]) : [];
  return writeForm(
    { ...doc, rules: old.filter((_, i) => i !== index) },
    rules.filter((_, i) => i !== index),
  );
}
