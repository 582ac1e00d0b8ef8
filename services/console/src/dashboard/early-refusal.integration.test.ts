/**
 * Real servers: Kafka, Redis, ClickHouse; the console's dashboard listening on a loopback port; a
 * keep-alive client (node:http Agent, one socket) as the browser's `fetch` uses. The dashboard's
 * upload and body-taking routes share the gateway's guard (early-refusal.ts in @ingest/http): a
 * request refused before its body was read leaves the connection usable or closes it, so the
 * next request is answered at once (issue 27, item 3).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  compressionBomb,
  createGatewayFixture,
  csvMultipart,
  DASHBOARD_HOST,
  DASHBOARD_ORIGIN,
  type DashboardUser,
  type GatewayFixture,
  refusalThenNext,
  type SentRequest,
  signedInOwner,
} from '@ingest/testkit/gateway';

let gw: GatewayFixture;
let baseUrl: string;
let user: DashboardUser;

beforeAll(async () => {
  // Per-address limit raised: every request here comes from 127.0.0.1.
  gw = await createGatewayFixture({ RATE_LIMIT_PER_MINUTE: '1000000' });
  baseUrl = await gw.console.listen({ host: '127.0.0.1', port: 0 });
  const { account } = await gw.newAccount('growth');
  user = await signedInOwner(gw, account.id);
});

afterAll(async () => {
  await gw?.close();
});

function dashboard(signedIn: boolean): Record<string, string> {
  const base = { host: DASHBOARD_HOST, origin: DASHBOARD_ORIGIN };
  return signedIn ? { ...base, cookie: user.cookie, 'x-csrf-token': user.csrfToken } : base;
}

function csvUpload(content: Buffer, signedIn = true, filename = 'events.csv'): SentRequest {
  const { body, contentType } = csvMultipart(content, 'file', filename);
  return { method: 'POST', path: '/dashboard/api/jobs/csv', headers: { ...dashboard(signedIn), 'content-type': contentType }, body };
}

const rows = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => `e,2026-01-01T00:00:00Z,u${i}@b.io\n`).join(''));

const cases: { name: string; status: number; request: () => SentRequest }[] = [
  {
    name: 'dashboard CSV: a header of 200,000 columns (400)',
    status: 400,
    request: () => csvUpload(Buffer.concat([Buffer.from(`event_name,timestamp,email${','.repeat(199_997)}\n`), rows(50_000)])),
  },
  { name: 'dashboard CSV: no session (401)', status: 401, request: () => csvUpload(rows(50_000), false) },
  // The upload handler is the gateway's: a gzip file is inflated, bounded (issue 27, item 2).
  {
    name: 'dashboard CSV: a .csv.gz bomb of 300 MB (413)',
    status: 413,
    request: () => csvUpload(compressionBomb('gzip', 300 * 1024 * 1024), true, 'events.csv.gz'),
  },
  {
    name: 'dashboard CRM dry-run (a test event): a body over 256 KiB (413)',
    status: 413,
    request: () => ({
      method: 'POST',
      path: '/dashboard/api/mapping/dry-run',
      headers: { ...dashboard(true), 'content-type': 'application/json' },
      body: Buffer.alloc(1024 * 1024, ' '),
    }),
  },
];

describe('an early refusal on the dashboard never wedges the keep-alive connection', () => {
  it.each(cases)('$name, then the next request on the connection is answered at once', async ({ status, request }) => {
    const next: SentRequest = { method: 'GET', path: '/dashboard/api/session', headers: dashboard(true) };
    const { refused, next: answer } = await refusalThenNext(baseUrl, request(), next);
    console.log(
      `refused ${refused.status} in ${refused.elapsedMs} ms (connection: ${String(refused.headers.connection)}); ` +
        `next ${answer.status} in ${answer.elapsedMs} ms on a ${answer.reusedSocket ? 'reused' : 'new'} connection`,
    );
    expect(refused.status).toBe(status);
    expect(answer.status).toBe(200);
    expect(answer.elapsedMs).toBeLessThan(2_000);
    if (!answer.reusedSocket) expect(refused.headers.connection).toBe('close');
  });
});
