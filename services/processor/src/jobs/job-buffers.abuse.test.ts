/**
 * Real servers: Kafka, Redis, ClickHouse; the gateway in this process, listening on a real
 * port; the processor's job runner as a real OS process (its RSS is what is judged).
 *
 * Stalled CSV uploads exhaust the processor: the gateway writes an upload's chunks to Kafka as
 * they stream in, and the job runner held every unsealed job's chunks until its seal, with no
 * byte cap. Here 20 uploads of 5 MB stall halfway (5 accounts x 4 uploads, within the
 * gateway's per-account limit; the body-idle timeout is long, so the gateway does not cut
 * them): the job runner keeps within its buffer cap (given up jobs are failed as
 * `buffer_full`), its RSS stays bounded, and another tenant's bulk and CSV jobs complete while
 * its normal traffic is unharmed.
 */
import { readFileSync } from 'node:fs';
import { JOB_CHUNK_SIZE, type JobStatus } from '@ingest/schemas';
import { createEndOffsetsReader, METRIC_NAMES } from '@ingest/platform';
import { sampleValue, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AbuseGateway, csvMultipart, startAbuseGateway } from '@ingest/testkit/gateway';
import { randomClientIp } from '@ingest/testkit/gateway';
import { withNeighbour } from '@ingest/testkit/gateway';
import { RawClient } from '@ingest/testkit/gateway';
import { metricSum, ProcessorFleet, type ProcessorProcess, processorSetup } from '@ingest/testkit';

const MiB = 1024 * 1024;
const BUFFER_MAX_BYTES = 8 * MiB;
const BUFFER_MAX_BYTES_PER_PARTITION = 4 * MiB;
/**
 * What the capped buffer may add to the RSS: its bytes parse into ~3x as much heap, plus the
 * garbage of the jobs given up until the GC runs, which grows when the machine is busy (the
 * runner then takes bigger batches between collections). Measured on the 2-core machine, Node 20:
 * with the caps +38 to +43 MiB alone and +64 MiB beside other tests and a benchmark; without them
 * +117 MiB (the buffer then holds 67.5 MiB). Node 24, with the young generation fixed below: +36
 * to +38 MiB with the caps, +83 MiB without (and then no job is given up, which fails first).
 */
const RSS_GROWTH_BOUND = 3 * BUFFER_MAX_BYTES + 56 * MiB;

let abuse: AbuseGateway;
let fleet: ProcessorFleet;
let processor: ProcessorProcess;
/** The stalled uploads' connections; closed at the end (the gateway then aborts their jobs). */
const stalled: RawClient[] = [];

beforeAll(async () => {
  abuse = await startAbuseGateway({ GATEWAY_BODY_IDLE_TIMEOUT_MS: '120000', GATEWAY_MAX_UPLOADS_PER_ACCOUNT: '4' });
  fleet = new ProcessorFleet(
    processorSetup(abuse.gw.kafka.prefix, abuse.gw.clickhouse.database, 'job-buffers-abuse', {
      PROCESSOR_STAGES: 'jobs',
      // The GC's own headroom is a runtime setting, not what this test judges: Node 24 sizes the
      // young generation from the machine (+90 MiB with the caps here, +140 without) and the
      // image sets 64 MB semi-spaces. Fixed at Node 20's default, the bound measures the buffer.
      NODE_OPTIONS: '--max-semi-space-size=16',
      PROCESSOR_JOB_BUFFER_MAX_BYTES: String(BUFFER_MAX_BYTES),
      PROCESSOR_JOB_BUFFER_MAX_BYTES_PER_PARTITION: String(BUFFER_MAX_BYTES_PER_PARTITION),
    }),
  );
  processor = await fleet.start();
});

afterAll(async () => {
  for (const client of stalled) client.destroy();
  await fleet?.killAll();
  await abuse?.close();
});

function rssBytes(pid: number): number {
  const kb = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1];
  return Number(kb ?? 0) * 1024;
}

/** A 5 MB CSV of 10,000 rows with a dozen short properties each (many small values: heap-heavy once parsed). */
function fiveMegabyteCsv(tag: string): Buffer {
  const properties = Array.from({ length: 12 }, (_, i) => `prop_${i}`);
  const rows = Array.from(
    { length: 10_000 },
    (_, r) => `signup,2026-01-01T00:00:00Z,${tag}${r}@b.io,${properties.map((_, i) => `v${i}-${r}-${'x'.repeat(24)}`).join(',')}`,
  );
  return Buffer.from(`event_name,timestamp,email,${properties.join(',')}\n${rows.join('\n')}\n`);
}

/** Sends the headers and half the body of a CSV upload; returns the connection and how many chunks of rows that half makes. */
async function stalledHalfway(apiKey: string, csv: Buffer): Promise<{ client: RawClient; chunks: number }> {
  const { body, contentType } = csvMultipart(csv);
  const client = new RawClient(abuse.port);
  const head =
    `POST /v1/backfill/csv HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${apiKey}\r\nX-Forwarded-For: ${randomClientIp()}\r\n` +
    `Content-Type: ${contentType}\r\nContent-Length: ${body.length}\r\n\r\n`;
  const half = Math.floor(body.length / 2);
  await client.send(Buffer.concat([Buffer.from(head), body.subarray(0, half)]));
  // Complete lines of the file in that half, minus the header: the gateway writes a chunk per 500 rows.
  const partHead = body.indexOf('\r\n\r\n') + 4;
  const lines = body.subarray(partHead, half).toString('utf8').split('\n').length - 1;
  return { client, chunks: Math.floor((lines - 1) / JOB_CHUNK_SIZE) };
}

async function jobStatus(apiKey: string, jobId: string): Promise<JobStatus | undefined> {
  const res = await fetch(`${abuse.baseUrl}/v1/jobs/${jobId}`, { headers: { authorization: `Bearer ${apiKey}`, 'x-forwarded-for': randomClientIp() } });
  return res.status === 200 ? ((await res.json()) as JobStatus) : undefined;
}

/** Messages in jobs.chunks, all partitions: the job runner has read them all when it handled as many. */
async function chunkMessages(): Promise<number> {
  const reader = createEndOffsetsReader(abuse.gw.kafka.kafka);
  await reader.connect();
  try {
    return (await reader.endOffsets([abuse.gw.kafka.topic('jobChunks')])).reduce((n, p) => n + Number(p.high - p.low), 0);
  } finally {
    await reader.disconnect();
  }
}

describe('stalled CSV uploads and the job runner', () => {
  it('20 uploads of 5 MB stalled halfway: the buffer stays within its cap, RSS is bounded, other jobs complete', async () => {
    const other = await abuse.gw.newAccount('growth');
    const small = (n: number) => Array.from({ length: n }, (_, i) => ({ eventName: 'Imported', email: `o${i}@b.io`, eventId: `other-${i}` }));
    // Warm-up: one job through the runner, so the baseline RSS includes its code paths.
    const warm = await fetch(`${abuse.baseUrl}/v1/events/bulk`, {
      method: 'POST',
      headers: { authorization: `Bearer ${other.apiKey}`, 'content-type': 'application/json', 'x-forwarded-for': randomClientIp() },
      body: JSON.stringify({ events: small(10) }),
    });
    const warmJob = ((await warm.json()) as { jobId: string }).jobId;
    await waitFor(async () => (await jobStatus(other.apiKey, warmJob))?.status === 'completed', { description: 'the warm-up job completed' });
    const baselineRss = rssBytes(processor.pid);

    let peakRss = baselineRss;
    let peakBuffered = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling && processor.exitStatus() === undefined) {
        peakRss = Math.max(peakRss, rssBytes(processor.pid));
        peakBuffered = Math.max(peakBuffered, sampleValue(await processor.metrics(), METRIC_NAMES.jobBufferBytes) ?? 0);
        await new Promise((r) => setTimeout(r, 200));
      }
    })();

    let stalledChunks = 0;
    const otherJobs = await withNeighbour(await abuse.neighbour(), abuse.gw, async () => {
      try {
        return await attack();
      } finally {
        sampling = false;
        await sampler;
      }
    });
    async function attack(): Promise<string[]> {
      for (let a = 0; a < 5; a++) {
        const { apiKey } = await abuse.gw.newAccount('growth');
        const csv = fiveMegabyteCsv(`a${a}-`);
        for (let u = 0; u < 4; u++) {
          const { client, chunks } = await stalledHalfway(apiKey, csv);
          stalled.push(client);
          stalledChunks += chunks;
        }
      }
      // The other tenant's jobs, sent while the stalled chunks flow in: one bulk, one CSV.
      const bulk = await fetch(`${abuse.baseUrl}/v1/events/bulk`, {
        method: 'POST',
        headers: { authorization: `Bearer ${other.apiKey}`, 'content-type': 'application/json', 'x-forwarded-for': randomClientIp() },
        body: JSON.stringify({ events: small(1_000) }),
      });
      expect(bulk.status).toBe(202);
      const { body, contentType } = csvMultipart(
        `event_name,timestamp,email\n${small(1_000)
          .map((e) => `Imported,2026-01-01T00:00:00Z,${e.email}`)
          .join('\n')}\n`,
      );
      const csv = await fetch(`${abuse.baseUrl}/v1/backfill/csv`, {
        method: 'POST',
        headers: { authorization: `Bearer ${other.apiKey}`, 'content-type': contentType, 'x-forwarded-for': randomClientIp() },
        body,
      });
      expect(csv.status).toBe(202);
      const jobs = [((await bulk.json()) as { jobId: string }).jobId, ((await csv.json()) as { jobId: string }).jobId];
      for (const jobId of jobs) {
        await waitFor(async () => (await jobStatus(other.apiKey, jobId))?.status === 'completed', {
          description: `the other tenant's job ${jobId} completed`,
          timeoutMs: 90_000,
          intervalMs: 500,
        });
      }
      // Every chunk of the stalled halves is written (the gateway reads them as they come) and has
      // reached the job runner; the others' jobs are 8 messages (chunks and seals) more.
      let seen = '';
      await waitFor(
        async () => {
          const handled = metricSum(await processor.metrics(), METRIC_NAMES.consumerMessages);
          const written = await chunkMessages();
          seen = `${handled} handled, ${written} written, ${stalledChunks} + 9 expected`;
          return handled >= written && written >= stalledChunks + 8;
        },
        { description: 'the job runner caught up with jobs.chunks', timeoutMs: 90_000, intervalMs: 500 },
      ).catch((err: unknown) => {
        throw new Error(`${(err as Error).message}: ${seen}`);
      });
      return jobs;
    }

    for (const jobId of otherJobs) expect(await jobStatus(other.apiKey, jobId)).toMatchObject({ status: 'completed', accepted: 1_000, rejected: 0 });
    const text = await processor.metrics();
    const gaveUp = sampleValue(text, METRIC_NAMES.jobsAbandoned, { source: 'csv', reason: 'buffer_full' }) ?? 0;
    const summary = `baseline RSS ${(baselineRss / MiB).toFixed(0)} MiB, peak ${(peakRss / MiB).toFixed(0)} MiB (bound +${(RSS_GROWTH_BOUND / MiB).toFixed(0)} MiB); peak buffered ${(peakBuffered / MiB).toFixed(1)} MiB; ${gaveUp} stalled jobs given up`;
    console.log(`job buffers: ${summary}`);
    expect(gaveUp, summary).toBeGreaterThan(0);
    expect(peakBuffered, summary).toBeGreaterThan(0);
    expect(peakBuffered, summary).toBeLessThanOrEqual(BUFFER_MAX_BYTES);
    expect(peakRss - baselineRss, summary).toBeLessThan(RSS_GROWTH_BOUND);
    expect(fleet.unexpectedExits()).toEqual([]);
  });
});
