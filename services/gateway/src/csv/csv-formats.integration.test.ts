/**
 * Real servers: Kafka and Redis. POST /v1/backfill/csv takes CSV as people export it (docs/api.md,
 * "CSV"): a semicolon file with `Event Name;Timestamp;Email` headers, epoch milliseconds and
 * zone-less times read in the `timezone` form field; bad form fields and undetectable
 * delimiters are a 400 naming what to send, before any job is made.
 */
import type { JobMessage } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { randomClientIp, useGatewayFixture } from '@ingest/testkit/gateway';

const gw = useGatewayFixture();

/** The form as a browser or `curl -F` sends it: the fields, then the file part. */
async function upload(apiKey: string, csv: string, fields: Record<string, string> = {}) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  form.append('file', new Blob([csv], { type: 'text/csv' }), 'export.csv');
  const encoded = new Response(form);
  return gw.app.inject({
    method: 'POST',
    url: '/v1/backfill/csv',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': encoded.headers.get('content-type') ?? '' },
    payload: Buffer.from(await encoded.arrayBuffer()),
    remoteAddress: randomClientIp(),
  });
}

describe('POST /v1/backfill/csv: CSV as people export it', () => {
  it('queues a semicolon file with human headers, epoch milliseconds and zone-less times in the timezone field', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const csv = ['Event Name;Timestamp;Email;Amount', 'Signed Up;1767225600000;ada@example.com;1,5', 'Paid;2026-07-01 12:00:00;bob@example.com;2,0'].join(
      '\r\n',
    );
    const res = await upload(apiKey, csv, { timezone: 'Europe/Berlin' });
    expect(res.statusCode, res.body).toBe(202);
    const { jobId } = res.json<{ jobId: string }>();
    const { values } = await gw.readTopic<JobMessage>('jobChunks', (v) => v.some((m) => m.jobId === jobId && m.type === 'sealed'), `job ${jobId} sealed`);
    const chunk = values.find((m) => m.jobId === jobId && m.type === 'chunk');
    if (chunk?.type !== 'chunk') throw new Error(`no chunk of ${jobId}: ${JSON.stringify(values.filter((m) => m.jobId === jobId))}`);
    expect(chunk.items.map((i) => i.event)).toEqual([
      expect.objectContaining({ eventName: 'Signed Up', timestamp: '2026-01-01T00:00:00.000Z', email: 'ada@example.com', properties: { Amount: '1,5' } }),
      expect.objectContaining({ eventName: 'Paid', timestamp: '2026-07-01T10:00:00.000Z', email: 'bob@example.com', properties: { Amount: '2,0' } }),
    ]);
  });

  it('refuses a bad timezone or delimiter field, and a header whose delimiter cannot be detected, naming what to send', async () => {
    const { apiKey } = await gw.newAccount('pro');
    const file = 'event_name,timestamp,email\nx,2026-01-01T00:00:00Z,a@b.io\n';
    const zone = await upload(apiKey, file, { timezone: 'Mars/Olympus' });
    expect(zone.statusCode, zone.body).toBe(400);
    expect(zone.json()).toMatchObject({ errors: [{ field: 'timezone', code: 'invalid_value' }] });
    const delimiter = await upload(apiKey, file, { delimiter: '|' });
    expect(delimiter.statusCode, delimiter.body).toBe(400);
    expect(delimiter.json()).toMatchObject({
      errors: [{ field: 'delimiter', code: 'invalid_value', message: expect.stringContaining('comma (,), semicolon (;), tab') }],
    });
    const unknown = await upload(apiKey, 'event_name|timestamp|email\nx|2026-01-01T00:00:00Z|a@b.io\n');
    expect(unknown.statusCode, unknown.body).toBe(400);
    expect(unknown.json()).toMatchObject({
      errors: [{ row: 1, code: 'unknown_delimiter', message: expect.stringContaining('tried comma (,), semicolon (;), tab') }],
    });
  });
});
