import type { CrmMapping, CrmProperty, CrmPropertyList } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { checkMappingAgainstProperties, objectsToCheck } from './mapping.crm-check.js';

const prop = (name: string, type: string, extra: Partial<CrmProperty> = {}): CrmProperty => ({ name, label: name, type, readOnly: false, ...extra });
const list = (crm: 'hubspot' | 'salesforce', object: 'contact' | 'company', properties: CrmProperty[], truncated = false): CrmPropertyList => ({
  v: 1,
  crm,
  object,
  properties,
  ...(truncated ? { truncated: true } : {}),
});

const hubspotContact = list('hubspot', 'contact', [
  prop('plan', 'enumeration', { options: [{ value: 'pro', label: 'Pro' }] }),
  prop('signups', 'number'),
  prop('last_seen_at', 'datetime'),
  prop('notes', 'string'),
  prop('vip', 'bool'),
  prop('hs_object_id', 'number', { readOnly: true }),
]);

function mapping(actions: CrmMapping['rules'][number]['actions'], type: CrmMapping['crm']['type'] = 'hubspot'): CrmMapping {
  return { version: 1, crm: { type, credentialsRef: 'main' }, rules: [{ id: 'signup', when: { eventName: 'Signed Up' }, object: 'contact', actions }] };
}

describe('checkMappingAgainstProperties', () => {
  it('accepts fields that exist, are writable and take the value', () => {
    const m = mapping([
      { op: 'set', field: 'plan', from: { property: 'plan' } },
      { op: 'set', field: 'plan', from: { constant: 'pro' } },
      { op: 'increment', field: 'signups' },
      { op: 'max', field: 'last_seen_at', from: { event: 'timestamp' } },
      { op: 'append', field: 'notes', from: { event: 'eventName' } },
      { op: 'set', field: 'vip', from: { constant: true } },
      // An enumeration may be a multiple checkbox: lists go there.
      { op: 'append', field: 'plan', from: { property: 'plans' } },
    ]);
    expect(checkMappingAgainstProperties(m, { contact: hubspotContact })).toEqual([]);
  });

  it('refuses an unknown field, naming the rule and the field', () => {
    const errors = checkMappingAgainstProperties(mapping([{ op: 'set', field: 'plann', from: { property: 'plan' } }]), { contact: hubspotContact });
    expect(errors).toEqual([
      { field: '/rules/0/actions/0/field', code: 'unknown_crm_field', message: 'rule "signup": contact field "plann" does not exist in hubspot' },
    ]);
  });

  it('says a field may exist when the list was cut', () => {
    const cut = list('hubspot', 'contact', [], true);
    const [error] = checkMappingAgainstProperties(mapping([{ op: 'increment', field: 'x' }]), { contact: cut });
    expect(error?.message).toMatch(/more fields than were read/);
  });

  it('refuses read-only fields and values of the wrong kind', () => {
    const m = mapping([
      { op: 'set', field: 'hs_object_id', from: { constant: 1 } },
      { op: 'increment', field: 'notes' },
      { op: 'set', field: 'signups', from: { constant: 'many' } },
      { op: 'set', field: 'last_seen_at', from: { event: 'email' } },
      { op: 'set', field: 'vip', from: { template: '{{eventName}}' } },
      { op: 'setOnce', field: 'plan', from: { constant: 'enterprise' } },
    ]);
    const errors = checkMappingAgainstProperties(m, { contact: hubspotContact });
    expect(errors.map((e) => [e.field, e.code])).toEqual([
      ['/rules/0/actions/0/field', 'read_only_field'],
      ['/rules/0/actions/1/op', 'incompatible_type'],
      ['/rules/0/actions/2/from', 'incompatible_type'],
      ['/rules/0/actions/3/from', 'incompatible_type'],
      ['/rules/0/actions/4/from', 'incompatible_type'],
      ['/rules/0/actions/5/from/constant', 'invalid_option'],
    ]);
    expect(errors[2]?.message).toBe('rule "signup": contact field "signups" is a number field and cannot take text');
  });

  it('maps Salesforce describe types the same way', () => {
    const sf = list('salesforce', 'contact', [
      prop('Score__c', 'double'),
      prop('Active__c', 'boolean'),
      prop('Seen__c', 'datetime'),
      prop('Tags__c', 'multipicklist'),
    ]);
    const ok = mapping(
      [
        { op: 'increment', field: 'Score__c' },
        { op: 'set', field: 'Active__c', from: { constant: false } },
        { op: 'min', field: 'Seen__c', from: { event: 'timestamp' } },
        { op: 'append', field: 'Tags__c', from: { event: 'eventName' } },
      ],
      'salesforce',
    );
    expect(checkMappingAgainstProperties(ok, { contact: sf })).toEqual([]);
    const bad = mapping([{ op: 'set', field: 'Active__c', from: { constant: 'yes' } }], 'salesforce');
    expect(checkMappingAgainstProperties(bad, { contact: sf }).map((e) => e.code)).toEqual(['incompatible_type']);
    // A multi-select constant is `a;b`: each part must be an active option.
    const tags = list('salesforce', 'contact', [
      prop('Tags__c', 'multipicklist', {
        options: [
          { value: 'a', label: 'A' },
          { value: 'b', label: 'B' },
        ],
      }),
    ]);
    const set = (constant: string) => mapping([{ op: 'set', field: 'Tags__c', from: { constant } }], 'salesforce');
    expect(checkMappingAgainstProperties(set('a;b'), { contact: tags })).toEqual([]);
    expect(checkMappingAgainstProperties(set('a;c'), { contact: tags }).map((e) => e.message)).toEqual([
      'rule "signup": contact field "Tags__c" has no option "c"',
    ]);
  });

  it('does not judge a CRM type it does not know, nor objects without a list', () => {
    const odd = list('hubspot', 'contact', [prop('geo', 'object_coordinates')]);
    expect(checkMappingAgainstProperties(mapping([{ op: 'set', field: 'geo', from: { constant: 1 } }]), { contact: odd })).toEqual([]);
    expect(checkMappingAgainstProperties(mapping([{ op: 'increment', field: 'nothing' }]), {})).toEqual([]);
  });

  it('needs the lists of the objects the rules use, none for a webhook', () => {
    const m = mapping([{ op: 'increment', field: 'signups' }]);
    expect(objectsToCheck(m)).toEqual(['contact']);
    expect(objectsToCheck(mapping([{ op: 'increment', field: 'signups' }], 'webhook'))).toEqual([]);
  });
});
