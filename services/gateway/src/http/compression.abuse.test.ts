/**
 * Real servers: Kafka, Redis, ClickHouse; the gateway listening on a real port. Compression bombs
 * (issue 27, item 1): bodies of a few hundred KB that inflate to 300 MB, on every intake route at
 * once, four tenants at a time. Each is refused with 413 at its route's decompressed limit, the
 * inflating runs on zlib's thread pool, not the event loop, and a neighbour sending normal
 * traffic loses nothing and keeps its latency.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AbuseGateway, compress, compressionBomb, csvMultipart, randomClientIp, startAbuseGateway, withNeighbour } from '@ingest/testkit/gateway';

let abuse: AbuseGateway;

beforeAll(async () => {
  abuse = await startAbuseGateway();
});

afterAll(async () => {
  await abuse?.close();
});

interface Attack {
  path: string;
  body: Buffer;
  headers: Record<string, string>;
}

async function send(apiKey: string, attack: Attack): Promise<string> {
  const res = await fetch(`${abuse.baseUrl}${attack.path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'x-forwarded-for': randomClientIp(), ...attack.headers },
    body: attack.body,
    signal: AbortSignal.timeout(20_000),
  });
  return `${attack.path} ${res.status} ${(await res.text()).slice(0, 160)}`;
}

describe('compression bombs', () => {
  it('refuses 300 MB bombs on every intake route with 413 while a neighbour is unharmed', async () => {
    const gzip = compressionBomb('gzip', 300 * 1024 * 1024);
    const zstd = compressionBomb('zstd', 300 * 1024 * 1024);
    const csv = csvMultipart(gzip, 'file', 'events.csv.gz');
    // A multipart body gzipped whole (Content-Encoding on the request), its file 60 MB of one letter.
    const whole = csvMultipart(Buffer.alloc(60 * 1024 * 1024, 'a'));
    const attacks: Attack[] = [
      { path: '/v1/events/bulk', body: gzip, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } },
      { path: '/v1/events/bulk', body: zstd, headers: { 'content-type': 'application/json', 'content-encoding': 'zstd' } },
      { path: '/v1/events', body: gzip, headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' } },
      { path: '/v1/backfill/csv', body: csv.body, headers: { 'content-type': csv.contentType } },
      { path: '/v1/backfill/csv', body: compress('gzip', whole.body), headers: { 'content-type': whole.contentType, 'content-encoding': 'gzip' } },
    ];
    // One account per lane: the upload slots (three per account) are not what is tested here.
    const keys = await Promise.all(Array.from({ length: 4 }, async () => (await abuse.gw.newAccount('growth')).apiKey));

    const answers = await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      const all: string[] = [];
      for (let round = 0; round < 5; round++) {
        all.push(...(await Promise.all(keys.map((key, lane) => send(key, attacks[(round + lane) % attacks.length] as Attack)))));
      }
      return all;
    });
    console.log(answers.map((a) => a.slice(0, 60)).join('\n'));
    expect(answers).toHaveLength(20);
    for (const answer of answers) expect(answer).toMatch(/^\S+ 413 .*decompresses to more than/);
  });
});
