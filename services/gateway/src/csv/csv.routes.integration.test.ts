/**
 * Real servers: Kafka and Redis. POST /v1/backfill/csv streams the file into job chunks, seals
 * the job only when the whole file was read and fits the allowance, and otherwise aborts it
 * (so the job runner drops its chunks) and answers with a precise problem.
 */
import type { JobMessage } from '@ingest/schemas';
import { type Account, allowancePeriod } from '@ingest/domain';
import { describe, expect, it } from 'vitest';
import { useGatewayFixture, randomClientIp } from '@ingest/testkit/gateway';
import { csvMultipart } from '@ingest/testkit/gateway';

const gw = useGatewayFixture();

function multipart(content: string | Buffer, field = 'file', filename = 'events.csv') {
  const { body, contentType } = csvMultipart(content, field, filename);
  return { payload: body, contentType };
}

function upload(apiKey: string, body: { payload: Buffer; contentType: string }) {
  return gw.app.inject({
    method: 'POST',
    url: '/v1/backfill/csv',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': body.contentType },
    payload: body.payload,
    remoteAddress: randomClientIp(),
  });
}

async function jobMessages(jobId: string, last: 'sealed' | 'aborted'): Promise<JobMessage[]> {
  const { values } = await gw.readTopic<JobMessage>('jobChunks', (v) => v.some((m) => m.jobId === jobId && m.type === last), `job ${jobId} ${last}`);
  return values.filter((m) => m.jobId === jobId);
}

async function abortedJobOf(account: Account): Promise<JobMessage[]> {
  const { values } = await gw.readTopic<JobMessage>('jobChunks', (v) => v.some((m) => m.accountId === account.id && m.type === 'aborted'), 'an aborted job');
  const aborted = values.find((m) => m.accountId === account.id && m.type === 'aborted');
  return values.filter((m) => m.jobId === aborted?.jobId);
}

describe('POST /v1/backfill/csv', () => {
  it('queues the rows of a file with BOM, CRLF and quoted fields as a sealed job', async () => {
    const { account, apiKey } = await gw.newAccount('pro');
    const csv =
      '\uFEFFevent_name,timestamp,email,domain,plan,note\r\nSigned Up,2026-01-01T00:00:00Z,ada@example.com,,pro,"hello, ""world"""\r\nUpgraded,2026-01-02T00:00:00Z,,acme.io,growth,"two\r\nlines"\r\nBroken,2026-01-03T00:00:00Z\r\n';
    const res = await upload(apiKey, multipart(csv));
    expect(res.statusCode).toBe(202);
    const receipt = res.json();
    expect(receipt).toEqual({ jobId: expect.any(String), totalEvents: 3, status: 'queued' });
    expect(res.headers['x-quota-remaining']).toBe(String(50_000 - 3));

    const messages = await jobMessages(receipt.jobId, 'sealed');
    expect(messages.map((m) => m.type)).toEqual(['chunk', 'sealed']);
    const chunk = messages[0];
    if (chunk?.type !== 'chunk') throw new Error('expected a chunk');
    expect(chunk).toMatchObject({ accountId: account.id, source: 'csv', seq: 0 });
    expect(chunk.items[0]).toMatchObject({
      index: 0,
      row: 2,
      event: { eventName: 'Signed Up', timestamp: '2026-01-01T00:00:00Z', email: 'ada@example.com', properties: { plan: 'pro', note: 'hello, "world"' } },
    });
    expect((chunk.items[0]?.event as { eventId?: string } | undefined)?.eventId).toMatch(/^csv_[0-9a-f]{32}$/);
    expect(chunk.items[1]).toMatchObject({ index: 1, row: 3, event: { domain: 'acme.io', properties: { plan: 'growth', note: 'two\r\nlines' } } });
    // Rows are CSV records: the two-line quoted field above is one row.
    expect(chunk.items[2]).toMatchObject({ index: 2, row: 4, event: null, error: { code: 'column_count' } });
    expect(messages[1]).toMatchObject({ type: 'sealed', chunks: 1, totalEvents: 3 });

    const status = await gw.app.inject({
      method: 'GET',
      url: `/v1/jobs/${receipt.jobId}`,
      headers: { authorization: `Bearer ${apiKey}` },
      remoteAddress: randomClientIp(),
    });
    expect(status.json()).toMatchObject({ status: 'queued', source: 'csv', totalEvents: 3 });
  });

  it('refuses a header without the required columns before making a job', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const res = await upload(apiKey, multipart('name,when,plan\nx,2026-01-01T00:00:00Z,pro\n'));
    expect(res.statusCode).toBe(400);
    const body = res.json();
    expect(body.type).toBe('/problems/validation-error');
    expect(body.errors).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ row: 1, column: 'event_name', code: 'missing_column' }),
        expect.objectContaining({ row: 1, column: 'timestamp', code: 'missing_column' }),
      ]),
    );
  });

  it('refuses more than 10,000 rows with 400 and aborts the chunks already written', async () => {
    const { account, apiKey } = await gw.newAccount('growth');
    const rows = Array.from({ length: 10_001 }, (_, i) => `e,2026-01-01T00:00:00Z,u${i}@b.io`).join('\n');
    const res = await upload(apiKey, multipart(`event_name,timestamp,email\n${rows}\n`));
    expect(res.statusCode).toBe(400);
    expect(res.json().errors).toEqual([expect.objectContaining({ row: 10_002, code: 'too_many_rows' })]);
    const messages = await abortedJobOf(account);
    expect(messages.filter((m) => m.type === 'chunk').length).toBe(20);
    expect(messages.some((m) => m.type === 'sealed')).toBe(false);
  });

  it('refuses a file over 50 MB with 413', async () => {
    const { apiKey } = await gw.newAccount('growth');
    const row = `e,2026-01-01T00:00:00Z,a@b.io,${'x'.repeat(6000)}\n`;
    const big = Buffer.from(`event_name,timestamp,email,blob\n${row.repeat(Math.ceil(50_000_001 / row.length))}`);
    const res = await upload(apiKey, multipart(big));
    expect(res.statusCode).toBe(413);
    expect(res.json().type).toBe('/problems/payload-too-large');
  });

  it('refuses an upload that fits no longer in the allowance with 402 and queues nothing', async () => {
    const { account, apiKey } = await gw.newAccount('free');
    await gw.redis.set(`quota:{${account.id}}:${allowancePeriod(Date.now()).id}`, 990);
    const rows = Array.from({ length: 11 }, (_, i) => `e,2026-01-01T00:00:00Z,u${i}@b.io`).join('\n');
    const res = await upload(apiKey, multipart(`event_name,timestamp,email\n${rows}\n`));
    expect(res.statusCode).toBe(402);
    expect(res.json()).toMatchObject({ remaining: 10, limit: 1000 });
    const messages = await abortedJobOf(account);
    expect(messages.map((m) => m.type)).toEqual(['chunk', 'aborted']);
  });

  it.each([
    ['a multipart body without a boundary', () => ({ payload: Buffer.from('x'), contentType: 'multipart/form-data' }), 400, '/problems/validation-error'],
    [
      'a multipart body that ends early',
      () => ({ payload: Buffer.from('--XYZ\r\nFalse--XYZ--\r\n'), contentType: 'multipart/form-data; boundary=XYZ' }),
      400,
      '/problems/validation-error',
    ],
    [
      'a file part cut off inside its headers',
      () => ({
        payload: Buffer.from('--XYZ\r\nContent-Disposition: form-data; name="file"; filename="a.csv"\r\n'),
        contentType: 'multipart/form-data; boundary=XYZ',
      }),
      400,
      '/problems/validation-error',
    ],
    ['a wrongly named part', () => multipart('event_name,timestamp,email\n', 'upload'), 400, '/problems/validation-error'],
    ['a JSON body', () => ({ payload: Buffer.from('{}'), contentType: 'application/json' }), 415, '/problems/unsupported-media-type'],
  ])('refuses %s', async (_name, body, status, type) => {
    const { apiKey } = await gw.newAccount('pro');
    const res = await upload(apiKey, body());
    expect(res.statusCode).toBe(status);
    expect(res.json().type).toBe(type);
  });
});
