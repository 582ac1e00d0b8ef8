/**
 * Real servers: Kafka, Redis, ClickHouse; the gateway listening on a real port and, for the job
 * status, the real processor in this process. Error amplification: a request can make the
 * service find many errors, but every errors[] lists at most 100 (with errorsTotal and
 * errorsTruncated when there were more), and a CSV header wider than the spec allows is one
 * error. The reproduction: a 400 KB CSV whose header has 200,000 empty columns was answered
 * 400 with an 18.6 MB body.
 */
import type { Component } from '@ingest/platform';
import { waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AbuseGateway, csvMultipart, startAbuseGateway } from '@ingest/testkit/gateway';
import { randomClientIp } from '@ingest/testkit/gateway';
import { startProcessorFor } from '@ingest/testkit/processor';
import { withNeighbour } from '@ingest/testkit/gateway';

const MAX_BODY_BYTES = 64 * 1024;

let abuse: AbuseGateway;
let apiKey: string;

beforeAll(async () => {
  abuse = await startAbuseGateway();
  ({ apiKey } = await abuse.gw.newAccount('growth'));
});

afterAll(async () => {
  await abuse?.close();
});

async function post(path: string, body: Buffer | string, contentType: string): Promise<{ status: number; bytes: number; json: Record<string, unknown> }> {
  const res = await fetch(`${abuse.baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': contentType, 'x-forwarded-for': randomClientIp() },
    body,
  });
  const text = await res.text();
  return { status: res.status, bytes: Buffer.byteLength(text), json: JSON.parse(text) as Record<string, unknown> };
}

/** 100 events, each wrong in five fields (an empty name, an id with a space, three unknown fields): 500 errors. */
const badEvents = Array.from({ length: 100 }, (_, i) => ({ eventName: '', email: 'a@b.io', eventId: `bad ${i}`, x1: 1, x2: 2, x3: 3 }));

describe('error amplification', () => {
  it('answers the 400 KB CSV with a 200,000-column header in one error under 64 KB, while a neighbour is unharmed', async () => {
    const csv = `event_name,timestamp,email${','.repeat(199_997)}\nsignup,2026-01-01T00:00:00Z,a@b.io\n`;
    expect(csv.length).toBeGreaterThan(195_000);
    const { body, contentType } = csvMultipart(csv);
    const neighbour = await abuse.neighbour();
    const answers = await withNeighbour(neighbour, abuse.gw, async () => {
      const all = [];
      // Four at a time, 20 in all: what used to cost ~340 MB of gateway heap each.
      for (let round = 0; round < 5; round++) all.push(...(await Promise.all(Array.from({ length: 4 }, () => post('/v1/backfill/csv', body, contentType)))));
      return all;
    });
    for (const answer of answers) {
      expect(answer.status).toBe(400);
      expect(answer.bytes).toBeLessThan(MAX_BODY_BYTES);
      expect(answer.json.errors).toEqual([
        {
          row: 1,
          code: 'too_many_columns',
          message: 'the header has 200000 columns; at most 55 are allowed (event_name, timestamp, email, domain, event_id and 50 properties)',
        },
      ]);
    }
  });

  it('lists the first 100 of 500 event errors in a 400, with errorsTotal and errorsTruncated', async () => {
    const answer = await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      const answers = await Promise.all(Array.from({ length: 20 }, () => post('/v1/events', JSON.stringify({ events: badEvents }), 'application/json')));
      return answers[0] as (typeof answers)[number];
    });
    expect(answer.status).toBe(400);
    expect(answer.bytes).toBeLessThan(MAX_BODY_BYTES);
    expect(answer.json).toMatchObject({ errorsTotal: 500, errorsTruncated: true });
    expect(answer.json.errors).toHaveLength(100);
    expect((answer.json.errors as { index: number }[])[0]?.index).toBe(0);
  });

  it('does the same in a partly accepted 202', async () => {
    const events = [...badEvents.slice(0, 99), { eventName: 'ok', email: 'a@b.io' }];
    const answer = await withNeighbour(await abuse.neighbour(), abuse.gw, () => post('/v1/events', JSON.stringify({ events }), 'application/json'));
    expect(answer.status).toBe(202);
    expect(answer.json).toMatchObject({ accepted: 1, rejected: 99, errorsTotal: 495, errorsTruncated: true });
    expect(answer.json.errors).toHaveLength(100);
  });

  it("bounds a job's errors to 100 with errorsTotal (10,000 invalid events in a bulk job)", async () => {
    const parts: Component[] = await startProcessorFor(abuse.gw, `error-lists-${Date.now()}`);
    try {
      const events = Array.from({ length: 10_000 }, (_, i) => ({ eventName: 'x', email: 'not-an-email', domain: 'not a domain', eventId: `e${i}` }));
      const receipt = await post('/v1/events/bulk', JSON.stringify({ events }), 'application/json');
      expect(receipt.status).toBe(202);
      const jobId = String(receipt.json.jobId);
      const status = await withNeighbour(await abuse.neighbour(), abuse.gw, () =>
        waitFor(
          async () => {
            const res = await fetch(`${abuse.baseUrl}/v1/jobs/${jobId}`, {
              headers: { authorization: `Bearer ${apiKey}`, 'x-forwarded-for': randomClientIp() },
            });
            const text = await res.text();
            const json = JSON.parse(text) as { status?: string };
            return json.status === 'completed' ? { json, bytes: Buffer.byteLength(text) } : false;
          },
          { description: `job ${jobId} completed`, timeoutMs: 60_000, intervalMs: 250 },
        ),
      );
      expect(status.bytes).toBeLessThan(MAX_BODY_BYTES);
      expect(status.json).toMatchObject({ rejected: 10_000, errorsTotal: 20_000, errorsTruncated: true });
      expect((status.json as { errors: unknown[] }).errors).toHaveLength(100);
    } finally {
      for (const part of [...parts].reverse()) await part.stop();
    }
  });
});
