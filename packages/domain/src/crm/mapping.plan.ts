import { isDeepStrictEqual } from 'node:util';
import type { CrmMapping, EventRecord, MappingCondition, MappingRule, MappingSource } from '@ingest/schemas';

/**
 * What the CRM sink would do for one event: the dry-run output, and the unit the sink applies.
 * Pure and deterministic (rules in mapping order, fields in action order), so a dry-run shows
 * exactly what the sink then does, and a redelivered event plans the same operations.
 */
export interface SkippedAction {
  /** The CRM field, or `$activity` for the activity record. */
  field: string;
  reason: 'missing_value' | 'not_a_number';
  /** The value that was missing or unusable, e.g. `properties.plan` or `email`. */
  source: string;
}

export interface PlannedOperation {
  ruleId: string;
  object: MappingRule['object'];
  key: { email: string } | { domain: string };
  set: Record<string, unknown>;
  setOnce: Record<string, unknown>;
  increment: Record<string, number>;
  /** Numbers; timestamps as epoch milliseconds. */
  max: Record<string, number>;
  min: Record<string, number>;
  append: Record<string, unknown[]>;
  activity?: { type: string; title: string; occurredAt: string };
  skipped: SkippedAction[];
}

/**
 * Key of the applied-events ledger that guards non-idempotent effects (increment, append,
 * activities). Each part is URI-encoded, so the `:` separator cannot be forged by an event id.
 */
export function ledgerKey(accountId: string, eventId: string, ruleId: string): string {
  return `crm:${encodeURIComponent(accountId)}:${encodeURIComponent(eventId)}:${encodeURIComponent(ruleId)}`;
}

const TEMPLATE_VARIABLE = /\{\{\s*([^{}]*?)\s*\}\}/g;
const PLAIN_VARIABLES = new Set(['eventName', 'email', 'domain', 'timestamp']);
const PROPERTY_PREFIX = 'properties.';

/** The variables a template uses, in order of appearance. */
export function templateVariables(template: string): string[] {
  return [...template.matchAll(TEMPLATE_VARIABLE)].map((m) => m[1] ?? '');
}

export function isKnownTemplateVariable(name: string): boolean {
  return PLAIN_VARIABLES.has(name) || (name.startsWith(PROPERTY_PREFIX) && name.length > PROPERTY_PREFIX.length);
}

type Resolved = { ok: true; value: unknown } | { ok: false; source: string };

function variable(event: EventRecord, name: string): Resolved {
  if (name.startsWith(PROPERTY_PREFIX)) return property(event, name.slice(PROPERTY_PREFIX.length));
  switch (name) {
    case 'eventName':
      return { ok: true, value: event.eventName };
    case 'eventId':
      return { ok: true, value: event.eventId };
    case 'timestamp':
      return { ok: true, value: event.timestampMs };
    case 'email':
    case 'domain':
      return event[name] === null ? { ok: false, source: name } : { ok: true, value: event[name] };
    default:
      return { ok: false, source: name };
  }
}

function property(event: EventRecord, key: string): Resolved {
  const value = Object.hasOwn(event.properties, key) ? event.properties[key] : undefined;
  return value === undefined ? { ok: false, source: `${PROPERTY_PREFIX}${key}` } : { ok: true, value };
}

function render(event: EventRecord, template: string): Resolved {
  let missing: string | undefined;
  const text = template.replace(TEMPLATE_VARIABLE, (_, name: string) => {
    if (name === 'timestamp') return new Date(event.timestampMs).toISOString();
    const r = variable(event, name);
    if (!r.ok) {
      missing ??= r.source;
      return '';
    }
    if (r.value === null) return '';
    return typeof r.value === 'object' ? JSON.stringify(r.value) : String(r.value as string | number | boolean);
  });
  return missing === undefined ? { ok: true, value: text } : { ok: false, source: missing };
}

function resolve(event: EventRecord, source: MappingSource): Resolved {
  if ('event' in source) return variable(event, source.event);
  if ('property' in source) return property(event, source.property);
  if ('constant' in source) return { ok: true, value: source.constant };
  return render(event, source.template);
}

function sourceName(source: MappingSource): string {
  if ('event' in source) return source.event;
  if ('property' in source) return `${PROPERTY_PREFIX}${source.property}`;
  return 'constant' in source ? 'constant' : 'template';
}

/** Numbers as they are; ISO 8601 date-times (e.g. a `trial_ends_at` property) as epoch ms. */
function toNumber(value: unknown): number | undefined {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  if (typeof value === 'string' && /^\d{4}-\d{2}-\d{2}T/.test(value)) {
    const ms = Date.parse(value);
    if (Number.isFinite(ms)) return ms;
  }
  return undefined;
}

/** A missing property satisfies only `neq`. */
export function conditionHolds(condition: MappingCondition, properties: Record<string, unknown>): boolean {
  const present = Object.hasOwn(properties, condition.property) && properties[condition.property] !== undefined;
  const actual = present ? properties[condition.property] : undefined;
  switch (condition.op) {
    case 'exists':
      return present && actual !== null;
    case 'eq':
      return present && isDeepStrictEqual(actual, condition.value);
    case 'neq':
      return !present || !isDeepStrictEqual(actual, condition.value);
    case 'gt':
      return typeof actual === 'number' && typeof condition.value === 'number' && actual > condition.value;
    case 'lt':
      return typeof actual === 'number' && typeof condition.value === 'number' && actual < condition.value;
    case 'in':
      return present && Array.isArray(condition.value) && condition.value.some((v) => isDeepStrictEqual(actual, v));
  }
}

function keyOf(rule: MappingRule, event: EventRecord): PlannedOperation['key'] | undefined {
  if (rule.object === 'contact') return event.email === null ? undefined : { email: event.email };
  return event.domain === null ? undefined : { domain: event.domain };
}

export function ruleMatches(rule: MappingRule, event: EventRecord): boolean {
  const names = typeof rule.when.eventName === 'string' ? [rule.when.eventName] : rule.when.eventName;
  if (!names.includes(event.eventName)) return false;
  return (rule.when.where ?? []).every((c) => conditionHolds(c, event.properties));
}

function planRule(rule: MappingRule, event: EventRecord, key: PlannedOperation['key']): PlannedOperation {
  const op: PlannedOperation = { ruleId: rule.id, object: rule.object, key, set: {}, setOnce: {}, increment: {}, max: {}, min: {}, append: {}, skipped: [] };
  for (const action of rule.actions) {
    if (action.op === 'increment') {
      op.increment[action.field] = (op.increment[action.field] ?? 0) + (action.by ?? 1);
      continue;
    }
    const r = resolve(event, action.from);
    if (!r.ok) {
      op.skipped.push({ field: action.field, reason: 'missing_value', source: r.source });
      continue;
    }
    if (action.op === 'set' || action.op === 'setOnce') {
      op[action.op][action.field] = r.value;
    } else if (action.op === 'append') {
      (op.append[action.field] ??= []).push(r.value);
    } else {
      const n = toNumber(r.value);
      if (n === undefined) {
        op.skipped.push({ field: action.field, reason: 'not_a_number', source: sourceName(action.from) });
        continue;
      }
      const current = op[action.op][action.field];
      op[action.op][action.field] = current === undefined ? n : action.op === 'max' ? Math.max(current, n) : Math.min(current, n);
    }
  }
  if (rule.activity) {
    const title = render(event, rule.activity.title);
    if (title.ok) op.activity = { type: rule.activity.type, title: String(title.value), occurredAt: new Date(event.timestampMs).toISOString() };
    else op.skipped.push({ field: '$activity', reason: 'missing_value', source: title.source });
  }
  return op;
}

/**
 * The operations for one event: one per matching rule (event name listed, all conditions hold,
 * and the event carries the identity the rule's object is keyed by). An action whose value is
 * missing is skipped and listed, the rest of the rule still applies.
 */
export function planSync(mapping: CrmMapping, event: EventRecord): PlannedOperation[] {
  const operations: PlannedOperation[] = [];
  for (const rule of mapping.rules) {
    const key = keyOf(rule, event);
    if (key === undefined || !ruleMatches(rule, event)) continue;
    operations.push(planRule(rule, event, key));
  }
  return operations;
}
