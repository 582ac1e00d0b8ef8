import { describe, expect, it } from 'vitest';
import { validateMapping } from './mapping.validate.js';

const hubspot = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot-prod' },
  rules: [
    {
      id: 'signup',
      when: { eventName: ['Signed Up', 'Invited'], where: [{ property: 'plan', op: 'in', value: ['pro', 'team'] }] },
      object: 'contact',
      actions: [
        { op: 'setOnce', field: 'first_seen_at', from: { event: 'timestamp' } },
        { op: 'set', field: 'plan', from: { property: 'plan' } },
        { op: 'max', field: 'last_seen_at', from: { event: 'timestamp' } },
        { op: 'increment', field: 'signups', by: 2 },
        { op: 'increment', field: 'signups' },
        { op: 'append', field: 'sources', from: { constant: 'app' } },
      ],
      activity: { type: 'note', title: '{{eventName}} on {{properties.plan}} at {{timestamp}}' },
    },
    { id: 'company-seen', when: { eventName: 'Page Viewed' }, object: 'company', actions: [{ op: 'min', field: 'first_visit', from: { event: 'timestamp' } }] },
  ],
};

const webhook = {
  version: 1,
  crm: { type: 'webhook', credentialsRef: 'acme-webhook-secret' },
  rules: [{ id: 'all', when: { eventName: 'Paid' }, object: 'company', actions: [{ op: 'set', field: 'status', from: { template: 'paid by {{email}}' } }] }],
};

type Obj = Record<string, unknown>;
interface Doc {
  crm: Obj;
  rules: { actions: Obj[]; when: { where: unknown[] }; activity: Obj }[];
}
const edit = (change: (doc: Doc) => void): unknown => {
  const doc = structuredClone(hubspot) as unknown as Doc;
  change(doc);
  return doc;
};
function rule(doc: Doc, i: number) {
  const r = doc.rules[i];
  if (!r) throw new Error(`no rule ${i}`);
  return r;
}
function action(doc: Doc, i: number, j: number) {
  const a = rule(doc, i).actions[j];
  if (!a) throw new Error(`no action ${i}/${j}`);
  return a;
}
const set = (target: object, key: string, value: unknown) => Object.assign(target, { [key]: value });

function errorsOf(input: unknown) {
  const r = validateMapping(input);
  if (r.ok) throw new Error('expected a rejection');
  return r.errors.map(({ field, code }) => ({ field, code }));
}

describe('mapping validator: accepted documents', () => {
  it('accepts a HubSpot-like mapping with every action kind and returns it', () => {
    expect(validateMapping(hubspot)).toEqual({ ok: true, mapping: hubspot });
  });

  it('accepts a webhook mapping with a template source', () => {
    expect(validateMapping(webhook)).toEqual({ ok: true, mapping: webhook });
  });
});

describe('mapping validator: shape errors name the field', () => {
  it('refuses a document that is not an object', () => {
    expect(errorsOf(null)).toEqual([{ field: '', code: 'invalid_type' }]);
  });

  it('refuses unknown fields, a wrong version, an unknown CRM and no rules', () => {
    const doc = { version: 2, crm: { type: 'pipedrive', credentialsRef: 'x', extra: 1 }, rules: [] };
    expect(errorsOf(doc)).toEqual([
      { field: '/version', code: 'invalid_value' },
      { field: '/crm/extra', code: 'unknown_field' },
      { field: '/crm/type', code: 'invalid_value' },
      { field: '/rules', code: 'too_few' },
    ]);
  });

  it('reports an unknown action op once, at the op', () => {
    expect(errorsOf(edit((d) => set(action(d, 0, 1), 'op', 'delete')))).toEqual([{ field: '/rules/0/actions/1/op', code: 'invalid_value' }]);
  });

  it('reports an action without op', () => {
    expect(errorsOf(edit((d) => set(action(d, 0, 1), 'op', undefined)))).toEqual([{ field: '/rules/0/actions/1/op', code: 'required' }]);
  });

  it('reports errors of the action shape its op selects', () => {
    const doc = edit((d) => Object.assign(action(d, 0, 3), { field: '__proto__', by: 'one' }));
    expect(errorsOf(doc)).toEqual([
      { field: '/rules/0/actions/3/field', code: 'invalid_format' },
      { field: '/rules/0/actions/3/by', code: 'invalid_type' },
    ]);
  });

  it('reports a malformed source once, as invalid_shape', () => {
    expect(errorsOf(edit((d) => set(action(d, 0, 1), 'from', { property: 'plan', constant: 1 })))).toEqual([
      { field: '/rules/0/actions/1/from', code: 'invalid_shape' },
    ]);
  });

  it('refuses a rule id that is not a slug and an unknown object', () => {
    expect(errorsOf(edit((d) => Object.assign(rule(d, 1), { id: 'Company Seen', object: 'deal' })))).toEqual([
      { field: '/rules/1/id', code: 'invalid_format' },
      { field: '/rules/1/object', code: 'invalid_value' },
    ]);
  });
});

describe('mapping validator: semantic errors', () => {
  it('refuses a duplicate rule id at the later rule', () => {
    const doc = edit((d) => d.rules.push(rule(d, 1), rule(d, 0), structuredClone(rule(d, 1))));
    expect(errorsOf(doc)).toEqual([
      { field: '/rules/2/id', code: 'duplicate' },
      { field: '/rules/3/id', code: 'duplicate' },
      { field: '/rules/4/id', code: 'duplicate' },
    ]);
  });

  it('refuses conflicting ops on one field, and the same non-combinable op twice', () => {
    const doc = edit((d) =>
      rule(d, 0).actions.push(
        { op: 'increment', field: 'plan' },
        { op: 'setOnce', field: 'first_seen_at', from: { event: 'timestamp' } },
        { op: 'max', field: 'last_seen_at', from: { property: 'at' } },
      ),
    );
    expect(errorsOf(doc)).toEqual([
      { field: '/rules/0/actions/6/field', code: 'conflict' },
      { field: '/rules/0/actions/7/field', code: 'conflict' },
    ]);
  });

  it('refuses unknown template variables in sources and activity titles', () => {
    const doc = edit((d) => {
      action(d, 0, 1).from = { template: '{{ properties.plan }} {{user}}' };
      rule(d, 0).activity.title = '{{properties.}} {{eventName}}';
    });
    expect(errorsOf(doc)).toEqual([
      { field: '/rules/0/actions/1/from/template', code: 'unknown_variable' },
      { field: '/rules/0/activity/title', code: 'unknown_variable' },
    ]);
  });

  it.each([['svc_live_abc123'], ['Bearer abc'], ['user:pass'], ['x'.repeat(65)]])('refuses a credentialsRef that looks like a secret: %s', (ref) => {
    const r = validateMapping(edit((d) => (d.crm.credentialsRef = ref)));
    expect(r).toEqual({
      ok: false,
      errors: [{ field: '/crm/credentialsRef', code: 'looks_like_secret', message: 'must name a stored credential, not contain the secret' }],
    });
  });

  it('accepts a 64-character credentialsRef', () => {
    expect(validateMapping(edit((d) => (d.crm.credentialsRef = 'x'.repeat(64)))).ok).toBe(true);
  });

  it.each([[Number.NaN], [Number.POSITIVE_INFINITY]])('refuses increment.by = %s', (by) => {
    expect(errorsOf(edit((d) => set(action(d, 0, 3), 'by', by)))).toEqual([{ field: '/rules/0/actions/3/by', code: 'invalid_value' }]);
  });

  it('refuses condition values that do not fit the op', () => {
    const doc = edit((d) =>
      rule(d, 0).when.where.push(
        { property: 'plan', op: 'in', value: 'pro' },
        { property: 'plan', op: 'eq' },
        { property: 'seats', op: 'gt', value: '5' },
        { property: 'plan', op: 'exists' },
      ),
    );
    expect(errorsOf(doc)).toEqual([
      { field: '/rules/0/when/where/1/value', code: 'invalid_value' },
      { field: '/rules/0/when/where/2/value', code: 'required' },
      { field: '/rules/0/when/where/3/value', code: 'invalid_value' },
    ]);
  });

  it('regression: actions that are not objects are refused instead of crashing the semantic checks (the discriminator let them through)', () => {
    const doc = edit((d) => rule(d, 0).actions.push(null as unknown as Obj, [null, null] as unknown as Obj, 'set' as unknown as Obj));
    const n = hubspot.rules[0]?.actions.length ?? 0;
    expect(errorsOf(doc)).toEqual([
      { field: `/rules/0/actions/${n}`, code: 'invalid_type' },
      { field: `/rules/0/actions/${n + 1}`, code: 'invalid_type' },
      { field: `/rules/0/actions/${n + 2}`, code: 'invalid_type' },
    ]);
  });
});
