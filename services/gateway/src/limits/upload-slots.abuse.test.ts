/**
 * Real servers: Kafka, Redis, ClickHouse; the gateway listening on a real port. Concurrent
 * uploads: an account (and a client address) may have only a few uploads open at once, so one
 * tenant cannot hold the gateway's sockets and the job runner's buffers with stalled uploads.
 * The stalled uploads here are real sockets that sent half a CSV and stopped.
 */
import { sampleValue, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AbuseGateway, csvMultipart, startAbuseGateway } from '@ingest/testkit/gateway';
import { randomClientIp } from '@ingest/testkit/gateway';
import { withNeighbour } from '@ingest/testkit/gateway';
import { RawClient } from '@ingest/testkit/gateway';

const PER_ACCOUNT = 3;
const PER_ADDRESS = 5;

let abuse: AbuseGateway;

beforeAll(async () => {
  abuse = await startAbuseGateway({ GATEWAY_MAX_UPLOADS_PER_ACCOUNT: String(PER_ACCOUNT), GATEWAY_MAX_UPLOADS_PER_ADDRESS: String(PER_ADDRESS) });
});

afterAll(async () => {
  await abuse?.close();
});

const csv = csvMultipart(`event_name,timestamp,email\n${Array.from({ length: 50 }, (_, i) => `signup,2026-01-01T00:00:00Z,u${i}@b.io`).join('\n')}\n`);

/** An upload that sends its headers and half its body, then stalls. */
async function stalledUpload(apiKey: string, ip: string): Promise<RawClient> {
  const client = new RawClient(abuse.port);
  const head =
    `POST /v1/backfill/csv HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${apiKey}\r\nX-Forwarded-For: ${ip}\r\n` +
    `Content-Type: ${csv.contentType}\r\nContent-Length: ${csv.body.length}\r\n\r\n`;
  await client.send(Buffer.concat([Buffer.from(head), csv.body.subarray(0, csv.body.length / 2)]));
  return client;
}

function upload(apiKey: string, ip: string): Promise<Response> {
  return fetch(`${abuse.baseUrl}/v1/backfill/csv`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': csv.contentType, 'x-forwarded-for': ip },
    body: csv.body,
  });
}

async function openUploads(): Promise<number> {
  return sampleValue(await abuse.gw.metrics.metrics(), 'ingest_uploads_open') ?? 0;
}

async function refusals(scope: string): Promise<number> {
  return sampleValue(await abuse.gw.metrics.metrics(), 'ingest_upload_refusals_total', { scope }) ?? 0;
}

describe('concurrent uploads', () => {
  it('refuses an account its uploads past the limit with 429 while a neighbour is unharmed, and admits them again once the stalled ones end', async () => {
    const { apiKey } = await abuse.gw.newAccount('growth');
    const stalled: RawClient[] = [];
    await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      for (let i = 0; i < PER_ACCOUNT; i++) stalled.push(await stalledUpload(apiKey, randomClientIp()));
      // The stalled uploads hold their slots (the handler is reading their bodies).
      await waitFor(async () => (await openUploads()) === PER_ACCOUNT, { description: `${PER_ACCOUNT} uploads open` });
      const refused = await upload(apiKey, randomClientIp());
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('5');
      expect(await refused.json()).toMatchObject({ type: '/problems/rate-limited', limit: 'account_uploads', detail: expect.stringContaining('this account') });
      // Another account is not affected.
      const other = await abuse.gw.newAccount('growth');
      expect((await upload(other.apiKey, randomClientIp())).status).toBe(202);
    });
    expect(await refusals('account')).toBeGreaterThanOrEqual(1);
    for (const client of stalled) client.destroy();
    await waitFor(async () => (await openUploads()) === 0, { description: 'the slots of the closed uploads given back' });
    expect((await upload(apiKey, randomClientIp())).status).toBe(202);
  });

  it('refuses a client address its uploads past the limit, whichever accounts it uses', async () => {
    const ip = randomClientIp();
    const stalled: RawClient[] = [];
    const accounts = await Promise.all(Array.from({ length: PER_ADDRESS + 1 }, () => abuse.gw.newAccount('growth')));
    const fresh = accounts[PER_ADDRESS];
    if (!fresh) throw new Error('no account');
    await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      for (let i = 0; i < PER_ADDRESS; i++) stalled.push(await stalledUpload(accounts[i]?.apiKey ?? '', ip));
      await waitFor(async () => (await openUploads()) === PER_ADDRESS, { description: `${PER_ADDRESS} uploads open` });
      const refused = await upload(fresh.apiKey, ip);
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({ type: '/problems/rate-limited', limit: 'ip_uploads', detail: expect.stringContaining('client address') });
      expect(await refusals('address')).toBeGreaterThanOrEqual(1);
      expect((await upload(fresh.apiKey, randomClientIp())).status).toBe(202);
    });
    for (const client of stalled) client.destroy();
    await waitFor(async () => (await openUploads()) === 0, { description: 'the slots of the closed uploads given back' });
  });
});
