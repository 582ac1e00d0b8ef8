/**
 * Real servers: Kafka and Redis. A write whose acknowledgement is lost (the broker took it, the
 * answer never came: what a stalled broker or a cut connection leaves) answers 504
 * /problems/outcome-unknown naming what may be stored, keeps the charge (the write may count),
 * and keeps an Idempotency-Key bound to the job, so a retry never queues a copy.
 *
 * The producer here sends for real and then reports `kafka_outcome_unknown` for the messages a
 * test picks: the broker has them, the gateway does not know it.
 */
import type { JobMessage } from '@ingest/schemas';
import { KafkaError, type OutgoingMessage, type Producer } from '@ingest/platform';
import type { FastifyInstance } from 'fastify';
import { describe, expect, it } from 'vitest';
import { useGatewayFixture, randomClientIp } from '@ingest/testkit/gateway';

/** Which sends lose their acknowledgement; set per test. */
let losesAck: (messages: OutgoingMessage[]) => boolean = () => false;

function ackLosingProducer(real: Producer): Producer {
  return {
    ...real,
    async send(topic, messages) {
      await real.send(topic, messages);
      if (losesAck(messages)) throw new KafkaError('kafka_outcome_unknown', 'no answer within the in-flight timeout (test)', { retryable: true });
    },
  };
}

const isSeal = (messages: OutgoingMessage[]) => messages.some((m) => String(m.value).includes('"type":"sealed"'));
const isRawEvent = (messages: OutgoingMessage[]) => messages.some((m) => String(m.value).includes('"eventName":"lost-ack"'));

const gw = useGatewayFixture({}, { producer: ackLosingProducer });

const events = (n: number, eventName: string) => Array.from({ length: n }, (_, i) => ({ eventName, email: `u${i}@b.io` }));

function post(app: FastifyInstance, apiKey: string, url: string, body: unknown, key?: string) {
  return app.inject({
    method: 'POST',
    url,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    payload: JSON.stringify(body),
    remoteAddress: randomClientIp(),
  });
}

function csv(apiKey: string, content: string, key: string) {
  const boundary = `----test${Math.random().toString(16).slice(2)}`;
  return gw.app.inject({
    method: 'POST',
    url: '/v1/backfill/csv',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': `multipart/form-data; boundary=${boundary}`, 'idempotency-key': key },
    payload: Buffer.concat([
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="e.csv"\r\nContent-Type: text/csv\r\n\r\n`),
      Buffer.from(content),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]),
    remoteAddress: randomClientIp(),
  });
}

async function used(apiKey: string): Promise<number> {
  const res = await gw.app.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: randomClientIp() });
  return res.json<{ used: number }>().used;
}

describe('a write whose acknowledgement is lost', () => {
  it('POST /v1/events: 504 naming every eventId, still charged, and the events are in Kafka', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    losesAck = isRawEvent;
    const res = await post(gw.app, apiKey, '/v1/events', {
      events: [...events(3, 'lost-ack'), { eventName: 'lost-ack', email: 'x@b.io', eventId: 'given-1' }],
    });
    losesAck = () => false;

    expect(res.statusCode, res.body).toBe(504);
    expect(res.headers['content-type']).toContain('application/problem+json');
    const body = res.json<{ type: string; eventIds: string[] }>();
    expect(body.type).toBe('/problems/outcome-unknown');
    expect(body.eventIds).toHaveLength(4);
    expect(body.eventIds).toContain('given-1');
    // Maybe stored, so not given back: reconcile charges exactly what was stored.
    expect(await used(apiKey)).toBe(4);

    const { values } = await gw.readTopic<{ accountId: string; eventId: string }>(
      'eventsRaw',
      (v) => v.filter((e) => e.accountId === account.id).length >= 4,
      `4 raw events of ${account.id}`,
    );
    expect(new Set(values.filter((e) => e.accountId === account.id).map((e) => e.eventId))).toEqual(new Set(body.eventIds));
  });

  it('POST /v1/events/bulk: 504 with the jobId; the job stays queued and charged; a retry with the key answers that job', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    const body = { events: events(20, 'bulk-lost-ack') };
    losesAck = isSeal;
    const res = await post(gw.app, apiKey, '/v1/events/bulk', body, 'import-504');
    losesAck = () => false;

    expect(res.statusCode, res.body).toBe(504);
    const problem = res.json<{ type: string; jobId: string }>();
    expect(problem.type).toBe('/problems/outcome-unknown');
    expect(problem.jobId).toMatch(/^[0-9a-f-]{36}$/);

    // Not aborted: the sealed job is in Kafka and nothing marks it aborted.
    const { values } = await gw.readTopic<JobMessage>(
      'jobChunks',
      (v) => v.some((m) => m.jobId === problem.jobId && m.type === 'sealed'),
      `the seal of ${problem.jobId}`,
    );
    expect(values.filter((m) => m.jobId === problem.jobId).map((m) => m.type)).not.toContain('aborted');
    const status = await gw.app.inject({
      method: 'GET',
      url: `/v1/jobs/${problem.jobId}`,
      headers: { authorization: `Bearer ${apiKey}` },
      remoteAddress: randomClientIp(),
    });
    expect(status.statusCode).toBe(200);
    expect(status.json<{ status: string }>().status).toBe('queued');
    expect(await used(apiKey)).toBe(20);

    const retry = await post(gw.app, apiKey, '/v1/events/bulk', body, 'import-504');
    expect(retry.statusCode, retry.body).toBe(202);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.json<{ jobId: string }>().jobId).toBe(problem.jobId);
    expect(await used(apiKey)).toBe(20);
    const sealed = await gw.readTopic<JobMessage>('jobChunks', (v) => v.some((m) => m.jobId === problem.jobId), 'the chunks again');
    expect(sealed.values.filter((m) => m.accountId === account.id && m.type === 'sealed')).toHaveLength(1);
  });

  it('POST /v1/backfill/csv: 504 with the jobId, charged once, and the key answers that job', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const file = 'event_name,email,timestamp\n' + Array.from({ length: 12 }, (_, i) => `csv-lost-ack,c${i}@b.io,2026-01-01T00:00:00Z`).join('\n') + '\n';
    losesAck = isSeal;
    const res = await csv(apiKey, file, 'backfill-504');
    losesAck = () => false;

    expect(res.statusCode, res.body).toBe(504);
    const problem = res.json<{ type: string; jobId: string; totalEvents: number }>();
    expect(problem.type).toBe('/problems/outcome-unknown');
    expect(problem.totalEvents).toBe(12);
    expect(await used(apiKey)).toBe(12);

    const retry = await csv(apiKey, file, 'backfill-504');
    expect(retry.statusCode, retry.body).toBe(202);
    expect(retry.json<{ jobId: string }>().jobId).toBe(problem.jobId);
    expect(await used(apiKey)).toBe(12);
  });

  it('a chunk whose acknowledgement is lost before the seal is a plain 503: the job was never queued and nothing is charged', async () => {
    const { apiKey } = await gw.newAccount('pro');
    losesAck = (messages) => messages.some((m) => String(m.value).includes('"type":"chunk"'));
    const res = await post(gw.app, apiKey, '/v1/events/bulk', { events: events(5, 'chunk-lost-ack') });
    losesAck = () => false;

    expect(res.statusCode, res.body).toBe(503);
    expect(res.json<{ type: string }>().type).toBe('/problems/unavailable');
    expect(res.headers['retry-after']).toBeDefined();
    expect(await used(apiKey)).toBe(0);
  });
});
