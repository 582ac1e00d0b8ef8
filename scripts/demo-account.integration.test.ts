/**
 * Real servers: Kafka, Redis, ClickHouse; the real gateway and its admin listener on loopback ports. The demo account
 * script of `npm start` (its own process, as start.sh runs it) creates the account, key and
 * dashboard owner once, prints the same on the next start, and the printed owner can sign in.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, createGatewayFixture, type GatewayFixture } from '@ingest/testkit/gateway';

let gw: GatewayFixture;
let url: string;
let adminUrl: string;
const stackDir = mkdtempSync(join(tmpdir(), 'demo-account-'));

beforeAll(async () => {
  gw = await createGatewayFixture();
  url = await gw.console.listen({ host: '127.0.0.1', port: 0 });
  adminUrl = await gw.admin.listen({ host: '127.0.0.1', port: 0 });
});

afterAll(async () => {
  await gw?.close();
  rmSync(stackDir, { recursive: true, force: true });
});

// Asynchronous on purpose: the gateway answering the script runs in this process.
const runScript = async () =>
  (await promisify(execFile)('npx', ['tsx', 'scripts/demo-account.ts'], { env: { ...process.env, ADMIN_URL: adminUrl, ADMIN_TOKEN, STACK_DIR: stackDir } }))
    .stdout;

describe('demo account script', () => {
  it('prints a demo owner who can sign in to the dashboard, the same on every start', async () => {
    const first = await runScript();
    expect(first).toMatch(/^DEMO_OWNER_EMAIL=demo\+\S+@example\.com$/m);
    expect(await runScript()).toBe(first);

    const email = /^DEMO_OWNER_EMAIL=(.*)$/m.exec(first)?.[1] ?? '';
    const password = /^DEMO_OWNER_PASSWORD=(.*)$/m.exec(first)?.[1] ?? '';
    const signIn = await fetch(`${url}/dashboard/api/session`, {
      method: 'POST',
      headers: { origin: url, 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    expect(signIn.status).toBe(200);
    expect(((await signIn.json()) as { account: { id: string } }).account.id).toBe(/^DEMO_ACCOUNT_ID=(.*)$/m.exec(first)?.[1]);
  });
});
