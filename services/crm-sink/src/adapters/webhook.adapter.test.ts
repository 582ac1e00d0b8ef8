// Servers: the fake CRM's webhook receiver only (fastify on 127.0.0.1), over real HTTP.
import { WEBHOOK_SIGNATURE_HEADER, verifyWebhookSignature } from '@ingest/domain';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_CRM_OUTBOUND, FAKE_WEBHOOK_SECRET, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { type ActivityWrite, CrmError } from './adapter.js';
import { createAdapter, requestPlanner } from './index.js';

let crm: FakeCrm;
let webhookUrl: string;

beforeAll(async () => {
  crm = await startFakeCrm({ webhookSecrets: [FAKE_WEBHOOK_SECRET] });
  webhookUrl = `${crm.url}/webhook/acme`;
});
afterAll(() => crm.stop());
beforeEach(() => crm.reset());

const activity: ActivityWrite = {
  object: 'contact',
  key: 'ada@example.com',
  type: 'signup',
  title: 'Signed up',
  occurredAt: '2026-01-02T03:04:05.000Z',
  idempotencyKey: 'k1',
};

describe('webhook adapter', () => {
  it('delivers signed record batches that the receiver verifies and applies', async () => {
    const adapter = createAdapter({ type: 'webhook', url: webhookUrl, secret: FAKE_WEBHOOK_SECRET }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      expect(adapter).toMatchObject({ type: 'webhook', maxBatchSize: 100 });
      await expect(adapter.upsert('contact', [{ object: 'contact', key: 'ada@example.com', properties: { plan: 'pro', seats: 3 } }])).resolves.toEqual({
        failures: [],
      });
      expect(crm.records('webhook', 'contact').get('ada@example.com')?.properties).toEqual({ plan: 'pro', seats: 3 });
      expect(crm.calls[0]).toMatchObject({ crm: 'webhook', path: '/webhook/acme', token: 'acme', batchSize: 1, status: 200 });
      expect(crm.calls[0]?.body).toMatchObject({
        type: 'records.upsert',
        object: 'contact',
        records: [{ key: 'ada@example.com', properties: { plan: 'pro', seats: 3 } }],
      });
      await expect(adapter.read('contact', ['ada@example.com'], ['plan'])).resolves.toEqual(new Map());
    } finally {
      await adapter.close();
    }
  });

  it('sends the same activity key twice; the receiver keeps one', async () => {
    const adapter = createAdapter({ type: 'webhook', url: webhookUrl, secret: FAKE_WEBHOOK_SECRET }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      await adapter.createActivities([activity]);
      await adapter.createActivities([activity, { ...activity, idempotencyKey: 'k2' }]);
      expect([...crm.records('webhook', 'activity').keys()]).toEqual(['k1', 'k2']);
      expect(crm.calls[0]?.body).toMatchObject({ type: 'activities.create', activities: [activity] });
    } finally {
      await adapter.close();
    }
  });

  it('keeps the query string of the configured URL', async () => {
    const adapter = createAdapter({ type: 'webhook', url: `${webhookUrl}?source=ingest`, secret: FAKE_WEBHOOK_SECRET }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      await adapter.createActivities([activity]);
      expect(crm.calls[0]).toMatchObject({ path: '/webhook/acme?source=ingest', status: 200 });
    } finally {
      await adapter.close();
    }
  });

  it('gets a 401 from a receiver with another secret: auth', async () => {
    const adapter = createAdapter({ type: 'webhook', url: webhookUrl, secret: 'whsec_wrong_secret' }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      const err = await adapter.upsert('company', [{ object: 'company', key: 'acme.com', properties: {} }]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(CrmError);
      expect(err).toMatchObject({ kind: 'auth', status: 401 });
      expect((err as Error).message).not.toContain('whsec_wrong_secret');
    } finally {
      await adapter.close();
    }
  });

  it('plans the deliveries it makes (dry-run = real, apart from the send time)', async () => {
    const credential = { type: 'webhook' as const, url: webhookUrl, secret: FAKE_WEBHOOK_SECRET };
    const adapter = createAdapter(credential, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      await adapter.createActivities([activity]);
      const sent = crm.calls[0]?.body as { sentAt: string };
      expect(requestPlanner(credential, () => new Date(sent.sentAt)).createActivities([activity])).toEqual([{ method: 'POST', path: '', body: sent }]);
    } finally {
      await adapter.close();
    }
  });

  it('signs the exact bytes sent with a current timestamp', async () => {
    const received: { header?: string; body?: string } = {};
    const { createServer } = await import('node:http');
    const server = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        Object.assign(received, { header: req.headers[WEBHOOK_SIGNATURE_HEADER.toLowerCase()], body });
        res.end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const adapter = createAdapter({ type: 'webhook', url: `http://127.0.0.1:${port}/hooks/crm`, secret: 's3cret' }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      await adapter.createActivities([activity]);
      expect(verifyWebhookSignature('s3cret', received.header, received.body ?? '', { toleranceSeconds: 5 })).toMatchObject({ ok: true });
    } finally {
      await adapter.close();
      await new Promise((r) => server.close(r));
    }
  });
});
