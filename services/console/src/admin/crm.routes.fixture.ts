/**
 * The admin API's CRM routes over a real control plane (Kafka's compacted topics, from the local
 * stack or a container; see scripts/test), in-process through fastify's inject: the fixture and
 * helpers of the crm-*.routes integration tests.
 */
import type { CrmMapping } from '@ingest/schemas';
import type { LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import { useFixture } from '@ingest/testkit';
import { startAdminTestStack } from '@ingest/testkit/gateway';

export const TOKEN = 'admin-secret-token-for-the-crm-route-tests';
export const auth = { authorization: `Bearer ${TOKEN}` };

export const mapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'main' },
  rules: [
    {
      id: 'signup',
      when: { eventName: 'Signed Up', where: [{ property: 'plan', op: 'in', value: ['pro', 'team'] }] },
      object: 'contact',
      actions: [
        { op: 'set', field: 'plan', from: { property: 'plan' } },
        { op: 'setOnce', field: 'first_plan', from: { property: 'plan' } },
        { op: 'increment', field: 'signups' },
        { op: 'max', field: 'last_seen_at', from: { event: 'timestamp' } },
        { op: 'append', field: 'events', from: { event: 'eventName' } },
      ],
      activity: { type: 'product_event', title: '{{eventName}} on {{properties.plan}}' },
    },
    { id: 'company', when: { eventName: 'Signed Up' }, object: 'company', actions: [{ op: 'set', field: 'active', from: { constant: true } }] },
    { id: 'churn', when: { eventName: 'Churned' }, object: 'contact', actions: [{ op: 'set', field: 'churned', from: { constant: true } }] },
  ],
} satisfies CrmMapping;

export function expectProblem(res: LightMyRequestResponse, status: number, type: string): Record<string, unknown> {
  expect(res.statusCode).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = res.json() as Record<string, unknown>;
  expect(body).toMatchObject({ status, type, title: expect.any(String), detail: expect.any(String), requestId: expect.any(String) });
  return body;
}

export const base = (accountId: string) => `/admin/v1/accounts/${accountId}/crm`;

/** An admin test stack and its app for the test file (beforeAll / afterAll), with the helpers that need them. */
export function useCrmRoutes() {
  return useFixture(
    async () => {
      const stack = await startAdminTestStack();
      const app = await stack.app(TOKEN);
      return {
        stack,
        app,
        newAccount: async () => (await stack.controlPlane.createAccount({ name: 'CRM test', plan: 'pro' })).id,
        putMapping: (accountId: string, payload: unknown, headers: Record<string, string> = {}) =>
          app.inject({ method: 'PUT', url: `${base(accountId)}/mapping?check=skip`, headers: { ...auth, ...headers }, payload: payload as object }),
      };
    },
    (crm) => crm.stack.close(),
  );
}
