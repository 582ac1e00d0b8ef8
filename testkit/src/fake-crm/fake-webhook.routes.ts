import { isStandardWebhookSecret, WEBHOOK_SIGNATURE_HEADER, verifyWebhookSignature } from '@ingest/domain';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Webhook } from 'standardwebhooks';
import type { FakeCrmState } from './fake-crm.state.js';

/**
 * A customer's webhook receiver, done right: verifies the Standard Webhooks signature with the
 * `standardwebhooks` library (any of the configured secrets, as during a rotation) and the older
 * `X-Ingest-Signature`, both over the raw body; keeps records by object and key, and dedupes
 * activities by `idempotencyKey`.
 * Records land in `records('webhook', 'contact' | 'company' | 'activity')`.
 */
export function registerFakeWebhook(app: FastifyInstance, state: FakeCrmState, secrets: readonly string[], rawBodies: WeakMap<FastifyRequest, string>): void {
  // A secret that is not `whsec_<base64>` is a raw key for the library.
  const verifiers = secrets.map((s) => (isStandardWebhookSecret(s) ? new Webhook(s) : new Webhook(s, { format: 'raw' })));

  function standardVerified(request: FastifyRequest, rawBody: string): boolean {
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) if (typeof value === 'string') headers[name] = value;
    return verifiers.some((v) => {
      try {
        v.verify(rawBody, headers);
        return true;
      } catch {
        return false;
      }
    });
  }

  app.post<{ Params: { name: string } }>('/webhook/:name', async (request, reply) => {
    const rawBody = rawBodies.get(request) ?? '';
    if (!standardVerified(request, rawBody)) return reply.code(401).send({ error: 'standard webhook signature not verified' });
    const header = request.headers[WEBHOOK_SIGNATURE_HEADER.toLowerCase()];
    const verification = verifyWebhookSignature([...secrets], typeof header === 'string' ? header : undefined, rawBody);
    if (!verification.ok) return reply.code(401).send({ error: verification.reason });
    const body = request.body as { type?: unknown; object?: unknown; records?: unknown; activities?: unknown };
    // "Test connection" (docs/crm-sync.md): verified like any delivery, stored as nothing.
    if (body.type === 'connection.test') return { received: 0, test: true };
    if (body.type === 'records.upsert' && (body.object === 'contact' || body.object === 'company') && Array.isArray(body.records)) {
      const store = state.store('webhook', body.object);
      for (const r of body.records as { key: string; properties: Record<string, unknown> }[]) {
        const record = store.get(r.key) ?? { id: state.newId(), properties: {}, associations: [] };
        Object.assign(record.properties, r.properties);
        store.set(r.key, record);
      }
      return { received: body.records.length };
    }
    if (body.type === 'activities.create' && Array.isArray(body.activities)) {
      const store = state.store('webhook', 'activity');
      for (const a of body.activities as Record<string, unknown>[]) {
        const key = String(a.idempotencyKey);
        if (!store.has(key)) store.set(key, { id: state.newId(), properties: a, associations: [] });
      }
      return { received: body.activities.length };
    }
    return reply.code(400).send({ error: 'unknown payload type' });
  });
}
