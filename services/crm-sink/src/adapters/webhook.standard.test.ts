// Servers: a node:http receiver on 127.0.0.1 that keeps each delivery's headers and raw bytes,
// over real HTTP. Verification is done by the real `standardwebhooks` npm package.
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { verifyWebhookSignature } from '@ingest/domain';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_CRM_OUTBOUND } from '@ingest/testkit/fake-crm';
import type { RecordWrite } from './adapter.js';
import { createAdapter } from './index.js';

interface Delivery {
  headers: Record<string, string>;
  body: string;
}

const OLD = `whsec_${Buffer.from('the-old-signing-key-of-32-bytes!').toString('base64')}`;
const NEW = `whsec_${Buffer.from('the-new-signing-key-of-32-bytes!').toString('base64')}`;
const record: RecordWrite = { object: 'contact', key: 'ada@example.com', properties: { plan: 'pro', seats: 3 } };

let server: Server;
let url: string;
let deliveries: Delivery[];
/** Statuses to answer, in order; 200 once used up. */
let answers: number[];

function plain(headers: IncomingHttpHeaders): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

beforeEach(async () => {
  deliveries = [];
  answers = [];
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      deliveries.push({ headers: plain(req.headers), body: Buffer.concat(chunks).toString('utf8') });
      res.statusCode = answers.shift() ?? 200;
      res.end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`;
});
afterEach(() => new Promise((r) => server.close(r)));

function verifies(secret: string, delivery: Delivery): boolean {
  try {
    new Webhook(secret).verify(delivery.body, delivery.headers);
    return true;
  } catch (err) {
    expect(err).toBeInstanceOf(WebhookVerificationError);
    return false;
  }
}

describe('webhook deliveries under Standard Webhooks', () => {
  it('are verified by the standardwebhooks library, which returns the payload we sent', async () => {
    const adapter = createAdapter({ type: 'webhook', url, secret: NEW }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      await adapter.upsert('contact', [record]);
    } finally {
      await adapter.close();
    }
    const [delivery] = deliveries as [Delivery];
    expect(delivery.headers['webhook-id']).toMatch(/^msg_[A-Za-z0-9_-]{22}$/);
    expect(Math.abs(Number(delivery.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(10);
    expect(delivery.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    expect(new Webhook(NEW).verify(delivery.body, delivery.headers)).toEqual({
      type: 'records.upsert',
      object: 'contact',
      records: [{ key: 'ada@example.com', properties: { plan: 'pro', seats: 3 } }],
      sentAt: expect.any(String),
    });
    // A tampered body or another secret is refused.
    expect(verifies(NEW, { ...delivery, body: delivery.body.replace('pro', 'free') })).toBe(false);
    expect(verifies(OLD, delivery)).toBe(false);
    // The older header still verifies during the transition.
    expect(verifyWebhookSignature(NEW, delivery.headers['x-ingest-signature'], delivery.body).ok).toBe(true);
  });

  it('are signed with both secrets during a rotation, and with the new one only after it', async () => {
    const rotating = createAdapter({ type: 'webhook', url, secret: NEW, previousSecret: OLD }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    const rotated = createAdapter({ type: 'webhook', url, secret: NEW }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      await rotating.upsert('contact', [record]);
      await rotated.upsert('contact', [record]);
    } finally {
      await Promise.all([rotating.close(), rotated.close()]);
    }
    const [during, after] = deliveries as [Delivery, Delivery];
    expect(during.headers['webhook-signature']?.split(' ')).toHaveLength(2);
    // A receiver still on the old secret and one already on the new secret both accept it.
    expect(verifies(OLD, during)).toBe(true);
    expect(verifies(NEW, during)).toBe(true);
    expect(verifyWebhookSignature(OLD, during.headers['x-ingest-signature'], during.body).ok).toBe(true);
    expect(verifyWebhookSignature(NEW, during.headers['x-ingest-signature'], during.body).ok).toBe(true);
    // Once the rotation ends, only the new secret verifies.
    expect(verifies(NEW, after)).toBe(true);
    expect(verifies(OLD, after)).toBe(false);
  });

  it('keeps the webhook-id and body of a delivery that is retried, and gives a later delivery of the same content a new id', async () => {
    answers = [503];
    const adapter = createAdapter({ type: 'webhook', url, secret: NEW }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      await expect(adapter.upsert('contact', [record])).rejects.toMatchObject({ kind: 'transient', status: 503 });
      await adapter.upsert('contact', [record]);
      await adapter.upsert('contact', [record]);
    } finally {
      await adapter.close();
    }
    const [failed, retried, later] = deliveries as [Delivery, Delivery, Delivery];
    expect(retried.headers['webhook-id']).toBe(failed.headers['webhook-id']);
    expect(retried.body).toBe(failed.body);
    expect(later.headers['webhook-id']).not.toBe(retried.headers['webhook-id']);
    for (const d of deliveries) expect(verifies(NEW, d)).toBe(true);
  });

  it('signs with a secret that is not whsec_<base64> as a raw key, which the library verifies in its raw format', async () => {
    const adapter = createAdapter({ type: 'webhook', url, secret: 's3cret-not-base64' }, { outboundPolicy: FAKE_CRM_OUTBOUND });
    try {
      await adapter.createActivities([
        { object: 'contact', key: 'ada@example.com', type: 'signup', title: 'Signed up', occurredAt: '2026-01-02T03:04:05.000Z', idempotencyKey: 'k1' },
      ]);
    } finally {
      await adapter.close();
    }
    const [delivery] = deliveries as [Delivery];
    expect(new Webhook('s3cret-not-base64', { format: 'raw' }).verify(delivery.body, delivery.headers)).toMatchObject({ type: 'activities.create' });
  });
});
