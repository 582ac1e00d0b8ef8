import type { CrmMapping, CrmPropertyList, MappingAction, MappingSource } from '@ingest/schemas';
import type { CrmObject } from './crm-writes.js';
import type { MappingFieldError } from './mapping.validate.js';

/**
 * A mapping checked against the CRM's own schema (docs/crm-mapping.md, "Checked against the
 * CRM"): every field an action writes must exist on the rule's object, be writable, and take the
 * kind of value the action gives it. Pure: the caller fetches the property lists (one per object
 * the rules use). Problems name the rule and the field, with a JSON Pointer like the validator's.
 */
export type PropertyCatalog = Partial<Record<CrmObject, CrmPropertyList>>;

/** What an action writes, as far as the mapping alone can tell. `any`: an event property, known only per event. */
export type ValueKind = 'string' | 'number' | 'boolean' | 'timestamp' | 'any';

type FieldFamily = 'text' | 'number' | 'boolean' | 'date' | 'choice' | 'multiChoice';

// The CRMs' field types (HubSpot `type`, Salesforce describe `type`) by the values they take.
// A type not listed is not judged: the CRM stays the judge of what we do not know.
const FAMILIES: Record<CrmPropertyList['crm'], Readonly<Record<string, FieldFamily>>> = {
  // A webhook receiver has no schema: nothing is judged.
  webhook: {},
  hubspot: { string: 'text', phone_number: 'text', number: 'number', bool: 'boolean', date: 'date', datetime: 'date', enumeration: 'choice' },
  salesforce: {
    string: 'text',
    textarea: 'text',
    email: 'text',
    phone: 'text',
    url: 'text',
    encryptedstring: 'text',
    combobox: 'text',
    double: 'number',
    currency: 'number',
    percent: 'number',
    int: 'number',
    long: 'number',
    boolean: 'boolean',
    date: 'date',
    datetime: 'date',
    picklist: 'choice',
    multipicklist: 'multiChoice',
  },
};

// Which value kinds each family takes. Timestamps are epoch milliseconds: numbers and dates take them.
const ACCEPTS: Record<FieldFamily, ReadonlySet<ValueKind>> = {
  text: new Set(['string', 'number', 'boolean', 'timestamp', 'any']),
  number: new Set(['number', 'timestamp', 'any']),
  boolean: new Set(['boolean', 'any']),
  date: new Set(['timestamp', 'any']),
  choice: new Set(['string', 'boolean', 'any']),
  multiChoice: new Set(['string', 'any']),
};

export function sourceKind(source: MappingSource): ValueKind {
  if ('event' in source) return source.event === 'timestamp' ? 'timestamp' : 'string';
  if ('property' in source) return 'any';
  if ('template' in source) return source.template.trim() === '{{timestamp}}' ? 'timestamp' : 'string';
  const c = source.constant;
  if (c === null) return 'any';
  return typeof c === 'string' ? 'string' : typeof c === 'number' ? 'number' : 'boolean';
}

export function actionKind(action: MappingAction): ValueKind {
  if (action.op === 'increment') return 'number';
  return sourceKind(action.from);
}

const describeKind: Record<ValueKind, string> = { string: 'text', number: 'a number', boolean: 'true/false', timestamp: 'a timestamp', any: 'a value' };

/** The objects whose property lists a check of this mapping needs. */
export function objectsToCheck(mapping: CrmMapping): CrmObject[] {
  if (mapping.crm.type === 'webhook') return [];
  return [...new Set(mapping.rules.map((r) => r.object))];
}

export function checkMappingAgainstProperties(mapping: CrmMapping, catalog: PropertyCatalog): MappingFieldError[] {
  const errors: MappingFieldError[] = [];
  mapping.rules.forEach((rule, i) => {
    const list = catalog[rule.object];
    if (!list) return;
    const byName = new Map(list.properties.map((p) => [p.name, p]));
    rule.actions.forEach((action, j) => {
      const at = `/rules/${i}/actions/${j}`;
      const where = `rule "${rule.id}": ${rule.object} field "${action.field}"`;
      const property = byName.get(action.field);
      if (!property) {
        // A truncated list may lack a real field: say so rather than call it unknown for sure.
        const hint = list.truncated ? ' (the CRM has more fields than were read; check the name)' : '';
        errors.push({ field: `${at}/field`, code: 'unknown_crm_field', message: `${where} does not exist in ${list.crm}${hint}` });
        return;
      }
      if (property.readOnly) {
        errors.push({ field: `${at}/field`, code: 'read_only_field', message: `${where} is read-only in ${list.crm}` });
        return;
      }
      const family = FAMILIES[list.crm][property.type];
      if (!family) return;
      const kind = actionKind(action);
      const opProblem = opFits(action.op, family, list.crm);
      if (opProblem) {
        errors.push({ field: `${at}/op`, code: 'incompatible_type', message: `${where} is a ${property.type} field: ${opProblem}` });
      } else if (!ACCEPTS[family].has(kind)) {
        errors.push({ field: `${at}/from`, code: 'incompatible_type', message: `${where} is a ${property.type} field and cannot take ${describeKind[kind]}` });
      } else if ((family === 'choice' || family === 'multiChoice') && action.op !== 'increment' && 'constant' in action.from) {
        const value = action.from.constant;
        const allowed = property.options?.map((o) => o.value);
        // A multiple choice takes `a;b`: each part must be an option.
        const parts = typeof value === 'string' ? value.split(';') : [];
        const missing = allowed && allowed.length > 0 ? parts.find((part) => !allowed.includes(part)) : undefined;
        if (missing !== undefined) {
          errors.push({ field: `${at}/from/constant`, code: 'invalid_option', message: `${where} has no option "${missing.slice(0, 100)}"` });
        }
      }
    });
  });
  return errors;
}

function opFits(op: MappingAction['op'], family: FieldFamily, crm: CrmPropertyList['crm']): string | undefined {
  // HubSpot names single and multiple checkboxes alike (`enumeration`); lists are sent `;`-joined, as a multiple checkbox takes them.
  if (op === 'append' && family === 'choice' && crm === 'hubspot') return undefined;
  if (op === 'increment' && family !== 'number') return 'increment needs a number field';
  if ((op === 'max' || op === 'min') && family !== 'number' && family !== 'date') return `${op} needs a number or date field`;
  if (op === 'append' && family !== 'text' && family !== 'multiChoice') return 'append needs a text or multi-select field';
  return undefined;
}
