/**
 * Real servers: Kafka (the control plane's topics, from the local stack or a container; see
 * scripts/test). The admin API listens on 127.0.0.1 (random port) and the CLI runs as its own
 * process, exactly as `npm run admin` starts it.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testCredentialKeys } from '@ingest/testkit';
import { type AdminTestStack, startAdminTestStack } from '@ingest/testkit/gateway';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const TSX = fileURLToPath(new URL('../../../../node_modules/.bin/tsx', import.meta.url));
const TOKEN = 'crm-cli-test-admin-token-0123456789abc';

let stack: AdminTestStack;
let adminUrl: string;
let dir: string;

beforeAll(async () => {
  stack = await startAdminTestStack();
  const app = await stack.app(TOKEN);
  await app.listen({ host: '127.0.0.1', port: 0 });
  adminUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  dir = await mkdtemp(join(tmpdir(), 'crm-cli-'));
});

afterAll(async () => {
  await stack?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

function cli(args: string[], env: Record<string, string> = {}, stdin?: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(
      TSX,
      ['tools/cli/src/main.ts', 'admin', ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ADMIN_URL: adminUrl, ADMIN_TOKEN: TOKEN, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr }),
    );
    child.stdin?.end(stdin ?? '');
  });
}

async function file(name: string, content: unknown): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, typeof content === 'string' ? content : JSON.stringify(content));
  return path;
}

const mapping = {
  version: 1,
  crm: { type: 'webhook', credentialsRef: 'hooks' },
  rules: [{ id: 'seen', when: { eventName: 'Logged In' }, object: 'contact', actions: [{ op: 'max', field: 'last_seen_at', from: { event: 'timestamp' } }] }],
};

describe('admin CLI: CRM commands against the admin API', () => {
  it('puts, lists and shows mapping versions, and dry-runs an event', async () => {
    const { id: accountId } = await stack.controlPlane.createAccount({ name: 'CLI CRM', plan: 'pro' });
    const put = await cli(['mapping', 'put', accountId, await file('m.json', mapping)]);
    expect(put).toMatchObject({ code: 0, stdout: `stored mapping version 1 for account ${accountId}\n` });
    const stale = await cli(['mapping', 'put', accountId, join(dir, 'm.json'), '--if-match', '7']);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/^error: 412 Precondition failed: .*version 1 is current/m);
    expect((await cli(['mapping', 'put', accountId, join(dir, 'm.json'), '--if-match', '1'])).code).toBe(0);

    const versions = await cli(['mapping', 'versions', accountId]);
    expect(versions.stdout).toMatch(/^VERSION +AUTHOR +CREATED\n2 +admin +\S+\n1 +admin +\S+\n$/);
    const one = await cli(['mapping', 'get', accountId, '--version', '1', '--json']);
    expect(JSON.parse(one.stdout)).toMatchObject({ version: 1, mapping });

    const event = await file('e.json', { eventName: 'Logged In', email: 'Ada@Example.com', timestamp: '2026-11-20T10:00:00Z' });
    const dry = await cli(['mapping', 'dry-run', accountId, event, '--json']);
    expect(dry.code).toBe(0);
    expect(JSON.parse(dry.stdout)).toMatchObject({
      mappingVersion: 2,
      rules: [{ ruleId: 'seen', matched: true }],
      operations: [{ ruleId: 'seen', key: { email: 'ada@example.com' }, max: { last_seen_at: Date.parse('2026-11-20T10:00:00Z') } }],
      calls: expect.any(Array),
      notes: expect.any(Array),
    });
    const text = await cli(['mapping', 'dry-run', accountId, event]);
    expect(text.stdout).toMatch(/^calls to \w+ \(credential \S+: \w+\) \(\d+\):$/m);
  });

  it('refuses an invalid mapping file with the errors and their pointers', async () => {
    const { id: accountId } = await stack.controlPlane.createAccount({ name: 'CLI CRM bad', plan: 'pro' });
    const bad = await cli(['mapping', 'put', accountId, await file('bad.json', { ...mapping, rules: [] })]);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^error: 400 Request is invalid: The mapping document is invalid/m);
    expect(bad.stderr).toMatch(/^ {2}\/rules: .*\(too_few\)$/m);
    expect(stack.controlPlane.mappingVersions(accountId)).toEqual([]);
  });

  it('stores credentials from the environment or stdin and never prints their secrets', async () => {
    const { id: accountId } = await stack.controlPlane.createAccount({ name: 'CLI creds', plan: 'pro' });
    const fromEnv = await cli(['credentials', 'put', accountId, 'main', '--type', 'hubspot'], { CRM_ACCESS_TOKEN: 'pat-ENV-SECRET' });
    expect(fromEnv).toMatchObject({ code: 0, stdout: `stored hubspot credential main for account ${accountId} (the secret is not shown)\n` });
    const fromStdin = await cli(
      ['credentials', 'put', accountId, 'hooks', '--type', 'webhook', '--stdin'],
      {},
      JSON.stringify({ url: 'https://example.com/h', secret: 'whsec_STDIN' }),
    );
    expect(fromStdin.code).toBe(0);

    const list = await cli(['credentials', 'list', accountId, '--json']);
    expect(JSON.parse(list.stdout)).toEqual({
      credentials: [
        { name: 'hooks', type: 'webhook', url: 'https://example.com/h', updatedAt: expect.any(String) },
        { name: 'main', type: 'hubspot', updatedAt: expect.any(String) },
      ],
    });
    for (const out of [fromEnv, fromStdin, list]) expect(out.stdout + out.stderr).not.toMatch(/ENV-SECRET|whsec_STDIN/);
    // Stored sealed for crm-sink's key, which opens it to what was given.
    const stored = stack.controlPlane.crmCredential(accountId, 'hooks');
    expect(stored?.sealed?.kid).toBe(testCredentialKeys().kid);
    expect(stored && testCredentialKeys().opener(stored)).toEqual({ type: 'webhook', url: 'https://example.com/h', secret: 'whsec_STDIN' });

    const missing = await cli(['credentials', 'put', accountId, 'sf', '--type', 'salesforce']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/\/accessToken: .*\(required\)/);
  });

  it('deletes a mapping (a version that stops sync) and a credential the mapping no longer uses', async () => {
    const { id: accountId } = await stack.controlPlane.createAccount({ name: 'CLI deletes', plan: 'pro' });
    expect(
      (
        await cli(
          ['credentials', 'put', accountId, 'hooks', '--type', 'webhook', '--stdin'],
          {},
          JSON.stringify({ url: 'https://example.com/h', secret: 'whsec_DEL' }),
        )
      ).code,
    ).toBe(0);
    expect((await cli(['mapping', 'put', accountId, await file('del.json', mapping)])).code).toBe(0);

    const inUse = await cli(['credentials', 'delete', accountId, 'hooks']);
    expect(inUse.code).toBe(1);
    expect(inUse.stderr).toMatch(/409 .*mapping version 1 syncs with credential hooks/);

    expect(await cli(['mapping', 'delete', accountId, '--if-match', '1'])).toMatchObject({
      code: 0,
      stdout: `deleted the mapping of account ${accountId}: version 2 stops sync\n`,
    });
    expect(stack.controlPlane.currentMapping(accountId)).toBeUndefined();
    expect(await cli(['credentials', 'delete', accountId, 'hooks'])).toMatchObject({ code: 0, stdout: `deleted credential hooks of account ${accountId}\n` });
    expect(stack.controlPlane.crmCredential(accountId, 'hooks')).toBeUndefined();
    expect((await cli(['credentials', 'delete', accountId, 'hooks'])).stderr).toMatch(/404/);
  });
});
