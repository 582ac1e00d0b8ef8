import type { CrmMapping, EventRecord } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { ledgerKey, planSync } from './mapping.plan.js';
import { validateMapping } from './mapping.validate.js';

const T = Date.UTC(2026, 10, 21, 12, 0, 0);
const ISO = '2026-11-21T12:00:00.000Z';

const mapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot-prod' },
  rules: [
    {
      id: 'contact-activity',
      when: { eventName: ['Signed Up', 'Upgraded'], where: [{ property: 'seats', op: 'gt', value: 1 }] },
      object: 'contact',
      actions: [
        { op: 'set', field: 'plan', from: { property: 'plan' } },
        { op: 'setOnce', field: 'signup_source', from: { constant: 'product' } },
        { op: 'increment', field: 'event_count' },
        { op: 'increment', field: 'event_count', by: 2 },
        { op: 'max', field: 'last_seen_at', from: { event: 'timestamp' } },
        { op: 'max', field: 'last_seen_at', from: { property: 'seen_at' } },
        { op: 'min', field: 'first_seen_at', from: { event: 'timestamp' } },
        { op: 'append', field: 'events', from: { event: 'eventName' } },
        { op: 'set', field: 'headline', from: { template: '{{email}} on {{properties.plan}} ({{properties.seats}}) at {{timestamp}}' } },
      ],
      activity: { type: 'product_event', title: '{{eventName}}: {{properties.plan}}' },
    },
    {
      id: 'company-seen',
      when: { eventName: 'Signed Up', where: [{ property: 'plan', op: 'in', value: ['pro', 'team'] }] },
      object: 'company',
      actions: [{ op: 'set', field: 'last_event_id', from: { event: 'eventId' } }],
    },
  ],
} satisfies CrmMapping;

function event(overrides: Partial<EventRecord> = {}): EventRecord {
  return {
    v: 1,
    accountId: 'acc-1',
    eventId: 'evt-1',
    eventName: 'Signed Up',
    email: 'ada@example.com',
    domain: 'example.com',
    timestampMs: T,
    receivedAtMs: T + 5,
    properties: { plan: 'pro', seats: 3, seen_at: '2026-11-22T00:00:00Z' },
    source: 'api',
    jobId: null,
    ...overrides,
  };
}

const empty = { set: {}, setOnce: {}, increment: {}, max: {}, min: {}, append: {}, skipped: [] };

describe('planSync', () => {
  it('the sample mapping is valid (so the plans below are of a real mapping)', () => {
    expect(validateMapping(mapping).ok).toBe(true);
  });

  it('plans every action kind, for the contact by email and the company by domain', () => {
    expect(planSync(mapping, event())).toEqual([
      {
        ruleId: 'contact-activity',
        object: 'contact',
        key: { email: 'ada@example.com' },
        set: { plan: 'pro', headline: `ada@example.com on pro (3) at ${ISO}` },
        setOnce: { signup_source: 'product' },
        increment: { event_count: 3 },
        max: { last_seen_at: Date.UTC(2026, 10, 22) },
        min: { first_seen_at: T },
        append: { events: ['Signed Up'] },
        activity: { type: 'product_event', title: 'Signed Up: pro', occurredAt: ISO },
        skipped: [],
      },
      { ruleId: 'company-seen', object: 'company', key: { domain: 'example.com' }, ...empty, set: { last_event_id: 'evt-1' } },
    ]);
  });

  it('is deterministic: the same event plans the same operations', () => {
    expect(planSync(mapping, event())).toStrictEqual(planSync(mapping, event()));
  });

  it('plans nothing for an event no rule names', () => {
    expect(planSync(mapping, event({ eventName: 'signed up' }))).toEqual([]);
  });

  it('plans only rules whose conditions all hold', () => {
    const ops = planSync(mapping, event({ properties: { plan: 'free', seats: 3 } }));
    expect(ops.map((o) => o.ruleId)).toEqual(['contact-activity']);
    expect(planSync(mapping, event({ properties: { plan: 'pro', seats: 1 } })).map((o) => o.ruleId)).toEqual(['company-seen']);
    expect(planSync(mapping, event({ eventName: 'Upgraded', properties: { plan: 'pro', seats: '9' } }))).toEqual([]);
  });

  it('skips a rule whose object identity the event lacks', () => {
    expect(planSync(mapping, event({ email: null })).map((o) => o.ruleId)).toEqual(['company-seen']);
    expect(planSync(mapping, event({ domain: null })).map((o) => o.ruleId)).toEqual(['contact-activity']);
  });

  it('skips actions whose value is missing or not a number, and keeps the rest', () => {
    const [op] = planSync(mapping, event({ eventName: 'Upgraded', properties: { seats: 2, seen_at: 'yesterday' } }));
    expect(op).toEqual({
      ruleId: 'contact-activity',
      object: 'contact',
      key: { email: 'ada@example.com' },
      set: {},
      setOnce: { signup_source: 'product' },
      increment: { event_count: 3 },
      max: { last_seen_at: T },
      min: { first_seen_at: T },
      append: { events: ['Upgraded'] },
      skipped: [
        { field: 'plan', reason: 'missing_value', source: 'properties.plan' },
        { field: 'last_seen_at', reason: 'not_a_number', source: 'properties.seen_at' },
        { field: 'headline', reason: 'missing_value', source: 'properties.plan' },
        { field: '$activity', reason: 'missing_value', source: 'properties.plan' },
      ],
    });
  });

  it('evaluates eq, neq, exists and lt conditions on properties', () => {
    const only = (where: unknown[]): CrmMapping => ({
      ...mapping,
      rules: [{ id: 'r', when: { eventName: 'Signed Up', where }, object: 'company', actions: [{ op: 'increment', field: 'n' }] }] as CrmMapping['rules'],
    });
    const matches = (where: unknown[], properties: Record<string, unknown>) => planSync(only(where), event({ properties })).length === 1;
    expect(matches([{ property: 'a', op: 'eq', value: { x: [1] } }], { a: { x: [1] } })).toBe(true);
    expect(matches([{ property: 'a', op: 'eq', value: 1 }], { a: '1' })).toBe(false);
    expect(matches([{ property: 'a', op: 'neq', value: 1 }], {})).toBe(true);
    expect(matches([{ property: 'a', op: 'neq', value: 1 }], { a: 1 })).toBe(false);
    expect(matches([{ property: 'a', op: 'exists' }], { a: null })).toBe(false);
    expect(matches([{ property: 'a', op: 'exists' }], { a: false })).toBe(true);
    expect(matches([{ property: 'a', op: 'lt', value: 5 }], { a: 4 })).toBe(true);
    expect(matches([{ property: 'a', op: 'lt', value: 5 }], { a: 5 })).toBe(false);
    expect(matches([{ property: 'a', op: 'in', value: [1, 2] }], { a: 3 })).toBe(false);
  });

  it('renders null and object property values in templates', () => {
    const m = {
      ...mapping,
      rules: [
        {
          id: 'r',
          when: { eventName: 'Signed Up' },
          object: 'contact',
          actions: [{ op: 'set', field: 'f', from: { template: '[{{properties.a}}|{{properties.b}}|{{domain}}]' } }],
        },
      ],
    } satisfies CrmMapping;
    expect(planSync(m, event({ properties: { a: null, b: { k: 1 } } }))[0]?.set).toEqual({ f: '[|{"k":1}|example.com]' });
    expect(planSync(m, event({ domain: null, properties: { a: 1, b: 2 } }))[0]?.skipped).toEqual([{ field: 'f', reason: 'missing_value', source: 'domain' }]);
  });
});

describe('ledgerKey', () => {
  it('joins account, event and rule unambiguously', () => {
    expect(ledgerKey('acc-1', 'evt-1', 'signup')).toBe('crm:acc-1:evt-1:signup');
    expect(ledgerKey('a', 'b:c', 'd')).not.toBe(ledgerKey('a:b', 'c', 'd'));
    expect(ledgerKey('a', 'b:c', 'd')).toBe('crm:a:b%3Ac:d');
  });
});
