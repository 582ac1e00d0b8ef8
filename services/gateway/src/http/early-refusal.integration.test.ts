/**
 * Real servers: Kafka, Redis, ClickHouse; the gateway listening on a loopback port; a keep-alive
 * client (node:http Agent, one socket) as SDKs and `fetch` use. Regression of issue 27, item 3:
 * the CSV route answered 400 for a header of 200,000 empty columns while the rest of the upload
 * lay unread, and the next request on the connection waited for the keep-alive timeout (73 s).
 * Every early refusal of an intake route must leave the connection usable or close it, so the
 * next request is answered at once (on the same connection, or a new one after
 * `Connection: close`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compressionBomb, createGatewayFixture, csvMultipart, type GatewayFixture, refusalThenNext, type SentRequest } from '@ingest/testkit/gateway';

let gw: GatewayFixture;
let baseUrl: string;
let apiKey: string;

beforeAll(async () => {
  // Per-address limit raised: every request here comes from 127.0.0.1.
  gw = await createGatewayFixture({ RATE_LIMIT_PER_MINUTE: '1000000' });
  baseUrl = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  ({ apiKey } = await gw.newAccount('growth'));
});

afterAll(async () => {
  await gw?.close();
});

function csvUpload(content: Buffer, key: string | null = apiKey, filename = 'events.csv'): SentRequest {
  const { body, contentType } = csvMultipart(content, 'file', filename);
  return {
    method: 'POST',
    path: '/v1/backfill/csv',
    headers: { 'content-type': contentType, ...(key === null ? {} : { authorization: `Bearer ${key}` }) },
    body,
  };
}

function json(path: string, body: Buffer, key: string | null = apiKey, encoding?: string): SentRequest {
  return {
    method: 'POST',
    path,
    headers: {
      'content-type': 'application/json',
      ...(key === null ? {} : { authorization: `Bearer ${key}` }),
      ...(encoding === undefined ? {} : { 'content-encoding': encoding }),
    },
    body,
  };
}

const rows = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => `e,2026-01-01T00:00:00Z,u${i}@b.io\n`).join(''));

const cases: { name: string; status: number; request: () => SentRequest }[] = [
  {
    name: 'CSV: a header of 200,000 empty columns (400)',
    status: 400,
    // Named columns and then empty ones (a line of commas alone is a blank row, skipped).
    request: () => csvUpload(Buffer.concat([Buffer.from(`event_name,timestamp,email${','.repeat(199_997)}\n`), rows(50_000)])),
  },
  {
    name: 'CSV: a file over 50 MB (413)',
    status: 413,
    request: () => csvUpload(Buffer.concat([Buffer.from('event_name,timestamp,email,blob\n'), Buffer.alloc(51_000_000, 'x')])),
  },
  { name: 'CSV: no API key (401)', status: 401, request: () => csvUpload(rows(50_000), null) },
  { name: 'bulk: a body over 16 MiB (413)', status: 413, request: () => json('/v1/events/bulk', Buffer.alloc(17 * 1024 * 1024, ' ')) },
  { name: 'events: no API key (401)', status: 401, request: () => json('/v1/events', Buffer.alloc(512 * 1024, ' '), null) },
  { name: 'events: a body over 1 MiB (413)', status: 413, request: () => json('/v1/events', Buffer.alloc(2 * 1024 * 1024, ' ')) },
  // Refused while inflating, the rest of the compressed body unread (issue 27, item 1).
  { name: 'events: a gzip bomb of 300 MB (413)', status: 413, request: () => json('/v1/events', compressionBomb('gzip', 300 * 1024 * 1024), apiKey, 'gzip') },
  { name: 'bulk: 512 KB that say gzip and are not (400)', status: 400, request: () => json('/v1/events/bulk', Buffer.alloc(512 * 1024, ' '), apiKey, 'gzip') },
  { name: 'CSV: a .csv.gz bomb of 300 MB (413)', status: 413, request: () => csvUpload(compressionBomb('gzip', 300 * 1024 * 1024), apiKey, 'events.csv.gz') },
];

describe('an early refusal never wedges the keep-alive connection', () => {
  it.each(cases)('$name, then the next request on the connection is answered at once', async ({ status, request }) => {
    const next: SentRequest = { method: 'GET', path: '/v1/usage', headers: { authorization: `Bearer ${apiKey}` } };
    const { refused, next: answer } = await refusalThenNext(baseUrl, request(), next);
    console.log(
      `refused ${refused.status} in ${refused.elapsedMs} ms (connection: ${String(refused.headers.connection)}, ${refused.body.slice(0, 120)}); ` +
        `next ${answer.status} in ${answer.elapsedMs} ms on a ${answer.reusedSocket ? 'reused' : 'new'} connection`,
    );
    expect(refused.status).toBe(status);
    expect(answer.status).toBe(200);
    expect(answer.elapsedMs).toBeLessThan(2_000);
    // Reconnecting is fine only when the refusal said so.
    if (!answer.reusedSocket) expect(refused.headers.connection).toBe('close');
  });
});
