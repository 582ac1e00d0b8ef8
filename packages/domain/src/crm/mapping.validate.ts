import { CrmMapping, type MappingActionOp, type MappingRule, compileValidator } from '@ingest/schemas';
import type { ErrorObject } from 'ajv';
import { escapePointer } from '../events/validate-event.js';
import { isKnownTemplateVariable, templateVariables } from './mapping.plan.js';

/**
 * Validation of a CRM mapping document for the admin API, the CLI and the sink. The schema
 * checks the shape; the rules a schema cannot say (see schemas/src/mapping.ts) are checked
 * here, each error with a JSON Pointer into the document and a stable code.
 */
export interface MappingFieldError {
  field: string;
  code: string;
  message: string;
}

export type MappingCheck = { ok: true; mapping: CrmMapping } | { ok: false; errors: MappingFieldError[] };

const KEYWORD_CODES: Record<string, string> = {
  required: 'required',
  type: 'invalid_type',
  maxLength: 'too_long',
  minLength: 'too_short',
  minItems: 'too_few',
  maxItems: 'too_many',
  additionalProperties: 'unknown_field',
  pattern: 'invalid_format',
  enum: 'invalid_value',
  const: 'invalid_value',
};

// Ops that may act on one field several times in a rule: their effects combine (sum, max, min, list).
const COMBINABLE: ReadonlySet<MappingActionOp> = new Set(['increment', 'max', 'min', 'append']);
const MAX_CREDENTIALS_REF = 64;
const SECRET_MARKERS = ['svc_live_', 'bearer', ':'];

export function createMappingValidator(): (input: unknown) => MappingCheck {
  const validateShape = compileValidator<CrmMapping>(CrmMapping, 'all');
  return (input) => {
    if (!validateShape(input)) return { ok: false, errors: shapeErrors(validateShape.errors ?? []) };
    const errors = semanticErrors(input);
    return errors.length > 0 ? { ok: false, errors } : { ok: true, mapping: input };
  };
}

let defaultValidator: ((input: unknown) => MappingCheck) | undefined;

/** Validates with a validator compiled on first use (not at import time). */
export function validateMapping(input: unknown): MappingCheck {
  defaultValidator ??= createMappingValidator();
  return defaultValidator(input);
}

function shapeErrors(raw: ErrorObject[]): MappingFieldError[] {
  // An anyOf reports every alternative's complaint; report the anyOf once instead.
  const anyOfPaths = raw.filter((e) => e.keyword === 'anyOf').map((e) => `${e.schemaPath}/`);
  const errors = raw.filter((e) => !anyOfPaths.some((p) => e.schemaPath.startsWith(p))).map(toFieldError);
  const seen = new Set<string>();
  return errors.filter((e) => {
    const key = `${e.field}\u0000${e.code}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function toFieldError(e: ErrorObject): MappingFieldError {
  if (e.keyword === 'discriminator') {
    const missing = e.params.error === 'tag';
    return {
      field: `${e.instancePath}/op`,
      code: missing ? 'required' : 'invalid_value',
      message: missing ? 'each action needs an op' : 'must be one of set, setOnce, increment, max, min, append',
    };
  }
  if (e.keyword === 'anyOf') {
    const message = e.instancePath.endsWith('/from')
      ? 'must be one of {event}, {property}, {constant} or {template}'
      : e.instancePath.endsWith('/eventName')
        ? 'must be an event name or a non-empty array of event names'
        : 'does not match any allowed shape';
    return { field: e.instancePath, code: 'invalid_shape', message };
  }
  let field = e.instancePath;
  if (e.keyword === 'required') field += `/${escapePointer(String(e.params.missingProperty))}`;
  if (e.keyword === 'additionalProperties') field += `/${escapePointer(String(e.params.additionalProperty))}`;
  const message = e.keyword === 'additionalProperties' ? 'is not a known field' : (e.message ?? 'is invalid');
  return { field, code: KEYWORD_CODES[e.keyword] ?? 'invalid', message };
}

function semanticErrors(mapping: CrmMapping): MappingFieldError[] {
  const errors: MappingFieldError[] = [];
  const ref = mapping.crm.credentialsRef;
  // The message never repeats the value: it may be a secret, and errors get logged.
  if (ref.length > MAX_CREDENTIALS_REF || SECRET_MARKERS.some((m) => ref.toLowerCase().includes(m))) {
    errors.push({ field: '/crm/credentialsRef', code: 'looks_like_secret', message: 'must name a stored credential, not contain the secret' });
  }
  const ruleIds = new Set<string>();
  mapping.rules.forEach((rule, i) => {
    if (ruleIds.has(rule.id)) errors.push({ field: `/rules/${i}/id`, code: 'duplicate', message: `rule id "${rule.id}" is used by an earlier rule` });
    ruleIds.add(rule.id);
    errors.push(...ruleErrors(rule, `/rules/${i}`));
  });
  return errors;
}

function ruleErrors(rule: MappingRule, at: string): MappingFieldError[] {
  const errors: MappingFieldError[] = [];
  (rule.when.where ?? []).forEach((c, j) => {
    const field = `${at}/when/where/${j}/value`;
    if (c.op === 'exists') return;
    if (c.value === undefined) errors.push({ field, code: 'required', message: `the ${c.op} condition needs a value` });
    else if (c.op === 'in' && !Array.isArray(c.value)) errors.push({ field, code: 'invalid_value', message: 'the in condition needs an array' });
    else if ((c.op === 'gt' || c.op === 'lt') && (typeof c.value !== 'number' || !Number.isFinite(c.value))) {
      errors.push({ field, code: 'invalid_value', message: `the ${c.op} condition needs a finite number` });
    }
  });

  const opsByField = new Map<string, MappingActionOp>();
  rule.actions.forEach((action, j) => {
    const earlier = opsByField.get(action.field);
    if (earlier !== undefined && (earlier !== action.op || !COMBINABLE.has(action.op))) {
      errors.push({ field: `${at}/actions/${j}/field`, code: 'conflict', message: `"${action.field}" is already changed by ${earlier} in this rule` });
    }
    opsByField.set(action.field, earlier ?? action.op);
    if (action.op === 'increment') {
      if (action.by !== undefined && !Number.isFinite(action.by))
        errors.push({ field: `${at}/actions/${j}/by`, code: 'invalid_value', message: 'must be a finite number' });
    } else if ('template' in action.from) {
      errors.push(...templateErrors(action.from.template, `${at}/actions/${j}/from/template`));
    }
  });
  if (rule.activity) errors.push(...templateErrors(rule.activity.title, `${at}/activity/title`));
  return errors;
}

function templateErrors(template: string, field: string): MappingFieldError[] {
  return templateVariables(template)
    .filter((name) => !isKnownTemplateVariable(name))
    .map((name) => ({
      field,
      code: 'unknown_variable',
      message: `{{${name}}} is not a template variable (eventName, email, domain, timestamp, properties.<key>)`,
    }));
}
