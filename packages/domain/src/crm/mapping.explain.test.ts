import type { CrmMapping, EventRecord } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { explainRules } from './mapping.explain.js';
import { planSync } from './mapping.plan.js';

const mapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'main' },
  rules: [
    { id: 'contact', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'increment', field: 'signups' }] },
    {
      id: 'pro-company',
      when: { eventName: ['Signed Up', 'Upgraded'], where: [{ property: 'plan', op: 'eq', value: 'pro' }] },
      object: 'company',
      actions: [{ op: 'set', field: 'plan', from: { property: 'plan' } }],
    },
    { id: 'other', when: { eventName: 'Churned' }, object: 'contact', actions: [{ op: 'set', field: 'churned', from: { constant: true } }] },
  ],
} satisfies CrmMapping;

function event(overrides: Partial<EventRecord> = {}): EventRecord {
  return {
    v: 1,
    accountId: 'acc_1',
    eventId: 'evt-1',
    eventName: 'Signed Up',
    email: 'ada@example.com',
    domain: null,
    timestampMs: 0,
    receivedAtMs: 0,
    properties: { plan: 'pro' },
    source: 'api',
    jobId: null,
    ...overrides,
  };
}

describe('explainRules', () => {
  it('says why each rule missed: event name, a condition, or the identity its object is keyed by', () => {
    expect(explainRules(mapping, event())).toEqual([
      { ruleId: 'contact', matched: true },
      { ruleId: 'pro-company', matched: false, reason: 'missing_identity' },
      { ruleId: 'other', matched: false, reason: 'event_name' },
    ]);
    expect(explainRules(mapping, event({ eventName: 'Upgraded', domain: 'example.com', properties: { plan: 'team' } }))[1]).toEqual({
      ruleId: 'pro-company',
      matched: false,
      reason: 'condition',
    });
  });

  it.each([
    ['contact only', event()],
    ['both identities', event({ domain: 'example.com' })],
    ['company only, wrong plan', event({ email: null, domain: 'example.com', properties: { plan: 'free' } })],
    ['another event', event({ eventName: 'Churned' })],
  ])('marks as matched exactly the rules planSync plans (%s)', (_name, e) => {
    const matched = explainRules(mapping, e)
      .filter((r) => r.matched)
      .map((r) => r.ruleId);
    expect(matched).toEqual(planSync(mapping, e).map((op) => op.ruleId));
  });
});
