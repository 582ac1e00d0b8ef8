import { describe, expect, it } from 'vitest';
import { newRule, readForm, removeRule, writeForm } from './mapping-form.model.js';

const doc = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'main' },
  rules: [
    {
      id: 'a',
      when: { eventName: ['Signed Up', 'Invited'], where: [{ property: 'plan', op: 'eq', value: 'pro' }] },
      object: 'contact',
      actions: [
        { op: 'set', field: 'plan', from: { constant: 'true' } },
        { op: 'increment', field: 'n', by: 2 },
        { op: 'max', field: 'seen', from: { event: 'timestamp' } },
      ],
      activity: { type: 'x', title: '{{eventName}}' },
    },
    { id: 'b', when: { eventName: 'Churned' }, object: 'company', actions: [{ op: 'set', field: 'active', from: { constant: false } }] },
  ],
};

describe('the rules form model', () => {
  it('reads a document and writes it back unchanged, conditions and activities included', () => {
    const form = readForm(JSON.stringify(doc));
    if (!form.ok) throw new Error(form.reason);
    expect(form.rules[0]).toMatchObject({
      eventName: 'Signed Up, Invited',
      actions: [{ value: '"true"' }, { value: '2' }, { source: 'event', value: 'timestamp' }],
    });
    expect(JSON.parse(writeForm(form.doc, form.rules))).toEqual(doc);
  });

  it('types constants as typed, and keeps quoted text a string', () => {
    const form = readForm(JSON.stringify(doc));
    if (!form.ok) throw new Error(form.reason);
    const rules = form.rules.map((r, i) => (i === 1 ? { ...r, actions: [{ op: 'set', field: 'n', source: 'constant' as const, value: '42' }] } : r));
    expect(JSON.parse(writeForm(form.doc, rules)).rules[1].actions[0].from).toEqual({ constant: 42 });
  });

  it('removes a rule with its own hidden parts, and adds new ones', () => {
    const form = readForm(JSON.stringify(doc));
    if (!form.ok) throw new Error(form.reason);
    const removed = JSON.parse(removeRule(form.doc, form.rules, 0));
    expect(removed.rules).toEqual([doc.rules[1]]);
    const added = JSON.parse(writeForm(form.doc, [...form.rules, newRule(3)]));
    expect(added.rules[2]).toEqual({ id: 'rule-3', when: { eventName: '' }, object: 'contact', actions: [{ op: 'set', field: '', from: { property: '' } }] });
  });

  it('says why a document cannot be a form', () => {
    expect(readForm('{')).toMatchObject({ ok: false });
    expect(readForm('{"rules": 3}')).toMatchObject({ ok: false });
  });
});
