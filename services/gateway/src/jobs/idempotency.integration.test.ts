/**
 * Real servers: Kafka and Redis, two gateway replicas. `Idempotency-Key` on POST /v1/events/bulk
 * and POST /v1/backfill/csv: a retry with the same key and body gets the first job's receipt
 * from any replica and is charged nothing more; another body under the same key is refused.
 */
import type { JobMessage } from '@ingest/schemas';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueSuffix } from '@ingest/testkit';
import { createGatewayFixture, type GatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { createIdempotencyStore } from '@ingest/http';

let gw: GatewayFixture;
let replica: FastifyInstance;

beforeAll(async () => {
  gw = await createGatewayFixture();
  replica = await gw.replica();
});

afterAll(async () => {
  await gw?.close();
});

const events = (n: number, tag: string) => Array.from({ length: n }, (_, i) => ({ eventName: `e-${tag}`, email: `u${i}@b.io` }));

function bulk(app: FastifyInstance, apiKey: string, body: unknown, key?: string) {
  return app.inject({
    method: 'POST',
    url: '/v1/events/bulk',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json', ...(key === undefined ? {} : { 'idempotency-key': key }) },
    payload: JSON.stringify(body),
    remoteAddress: randomClientIp(),
  });
}

function csv(app: FastifyInstance, apiKey: string, content: string, key?: string) {
  const boundary = `----test${Math.random().toString(16).slice(2)}`;
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="e.csv"\r\nContent-Type: text/csv\r\n\r\n`),
    Buffer.from(content),
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return app.inject({
    method: 'POST',
    url: '/v1/backfill/csv',
    headers: {
      authorization: `Bearer ${apiKey}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      ...(key === undefined ? {} : { 'idempotency-key': key }),
    },
    payload,
    remoteAddress: randomClientIp(),
  });
}

async function used(apiKey: string): Promise<number> {
  const res = await replica.inject({ method: 'GET', url: '/v1/usage', headers: { authorization: `Bearer ${apiKey}` }, remoteAddress: randomClientIp() });
  return res.json<{ used: number }>().used;
}

async function sealedJobsOf(accountId: string, atLeast: number): Promise<string[]> {
  const { values } = await gw.readTopic<JobMessage>(
    'jobChunks',
    (v) => v.filter((m) => m.accountId === accountId && m.type === 'sealed').length >= atLeast,
    `${atLeast} sealed jobs of ${accountId}`,
  );
  return values.filter((m) => m.accountId === accountId && m.type === 'sealed').map((m) => m.jobId);
}

describe('Idempotency-Key', () => {
  it('answers a retried bulk request with the first job, on another replica, and charges it once', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    const body = { events: events(30, 'a') };
    const first = await bulk(gw.app, apiKey, body, 'order-import-1');
    expect(first.statusCode).toBe(202);
    expect(first.headers['idempotent-replayed']).toBeUndefined();

    const retry = await bulk(replica, apiKey, body, 'order-import-1');
    expect(retry.statusCode).toBe(202);
    expect(retry.json()).toEqual(first.json());
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(await used(apiKey)).toBe(30);

    // A new job needs a new key; without a key every request is a new job.
    const other = await bulk(replica, apiKey, body, 'order-import-2');
    const unkeyed = await bulk(gw.app, apiKey, body);
    expect(other.json().jobId).not.toBe(first.json().jobId);
    expect(unkeyed.json().jobId).not.toBe(first.json().jobId);
    expect(await used(apiKey)).toBe(90);
    const sealed = await sealedJobsOf(account.id, 3);
    expect(sealed.sort()).toEqual([first.json().jobId, other.json().jobId, unkeyed.json().jobId].sort());
  });

  it('refuses the same key with a different body (422), and keeps keys apart per account', async () => {
    const a = await gw.newAccount('pro');
    const b = await gw.newAccount('pro');
    expect((await bulk(gw.app, a.apiKey, { events: events(2, 'x') }, 'k-1')).statusCode).toBe(202);
    const reused = await bulk(replica, a.apiKey, { events: events(3, 'x') }, 'k-1');
    expect(reused.statusCode).toBe(422);
    expect(reused.headers['content-type']).toContain('application/problem+json');
    expect(reused.json()).toMatchObject({ type: '/problems/idempotency-key-reused', status: 422 });
    expect(await used(a.apiKey)).toBe(2);
    // The same key in another account is another key.
    expect((await bulk(gw.app, b.apiKey, { events: events(3, 'x') }, 'k-1')).statusCode).toBe(202);
  });

  it('answers 409 while the first request with a key is still running, and frees a key whose request failed', async () => {
    const { apiKey } = await gw.newAccount('free');
    const body = { events: events(5, 'c') };
    const [one, two] = await Promise.all([bulk(gw.app, apiKey, body, 'same'), bulk(replica, apiKey, body, 'same')]);
    const codes = [one.statusCode, two.statusCode].sort();
    // Either the second arrived while the first ran (409), or after it finished (a replay).
    expect(codes[0]).toBe(202);
    expect([202, 409]).toContain(codes[1]);
    if (codes[1] === 409) expect([one, two].find((r) => r.statusCode === 409)?.json()).toMatchObject({ type: '/problems/idempotency-key-in-use' });
    expect(await used(apiKey)).toBe(5);

    // A request refused for the allowance leaves nothing behind: the key works once it fits.
    const big = { events: events(996, 'd') };
    expect((await bulk(gw.app, apiKey, big, 'too-big')).statusCode).toBe(402);
    const small = { events: events(995, 'd') };
    expect((await bulk(replica, apiKey, small, 'too-big')).statusCode).toBe(202);
    expect(await used(apiKey)).toBe(1_000);
  });

  it('refuses a malformed key with 400', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const res = await bulk(gw.app, apiKey, { events: events(1, 'm') }, 'x'.repeat(256));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ errors: [{ field: 'Idempotency-Key', code: 'invalid_format' }] });
  });

  it('answers a retried CSV upload with the first job on another replica, and refuses another file under its key', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    const file = 'event_name,timestamp,email\nImported,2026-01-01T00:00:00Z,a@b.io\nImported,2026-01-02T00:00:00Z,c@d.io\n';
    const first = await csv(gw.app, apiKey, file, 'csv-1');
    expect(first.statusCode).toBe(202);
    const retry = await csv(replica, apiKey, file, 'csv-1');
    expect(retry.statusCode).toBe(202);
    expect(retry.json()).toEqual(first.json());
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(await used(apiKey)).toBe(2);
    const changed = await csv(replica, apiKey, `${file}Imported,2026-01-03T00:00:00Z,e@f.io\n`, 'csv-1');
    expect(changed.statusCode).toBe(422);
    expect(await used(apiKey)).toBe(2);
    expect(await sealedJobsOf(account.id, 1)).toEqual([first.json().jobId]);
  });
});

describe('the idempotency record', () => {
  it('is claimed once, replays once completed, and is free again when released', async () => {
    const store = createIdempotencyStore({ redis: gw.redis, keyPrefix: `t${uniqueSuffix()}:` });
    const receipt = { jobId: 'job-1', totalEvents: 3, status: 'queued' as const };
    expect(await store.claim('acc_1', 'k', 'body-1')).toEqual({ kind: 'claimed' });
    expect(await store.claim('acc_1', 'k', 'body-1')).toEqual({ kind: 'in_progress' });
    expect(await store.claim('acc_1', 'k', 'body-2')).toEqual({ kind: 'mismatch' });
    await store.release('acc_1', 'k');
    expect(await store.claim('acc_1', 'k', 'body-2')).toEqual({ kind: 'claimed' });
    await store.complete('acc_1', 'k', receipt);
    expect(await store.peek('acc_1', 'k')).toEqual({ state: 'done', fingerprint: 'body-2', receipt });
    expect(await store.claim('acc_1', 'k', 'body-2')).toEqual({ kind: 'replay', receipt });
    // A completed record is never released.
    await store.release('acc_1', 'k');
    expect(await store.claim('acc_1', 'k', 'body-2')).toEqual({ kind: 'replay', receipt });
    expect(await store.peek('acc_2', 'k')).toBeUndefined();
  });
});
