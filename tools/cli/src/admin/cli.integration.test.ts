/**
 * Real servers: Kafka (the control plane's topics, from the local stack or a container; see
 * scripts/test). The admin API listens on 127.0.0.1 (random port) and the CLI runs as its own
 * process, exactly as `npm run admin` starts it.
 */
import { execFile } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { hashApiKey } from '@ingest/domain';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type AdminTestStack, startAdminTestStack } from '@ingest/testkit/gateway';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const TSX = fileURLToPath(new URL('../../../../node_modules/.bin/tsx', import.meta.url));
const TOKEN = 'cli-test-admin-token-0123456789abcdef';

let stack: AdminTestStack;
let adminUrl: string;

beforeAll(async () => {
  stack = await startAdminTestStack();
  const app = await stack.app(TOKEN);
  await app.listen({ host: '127.0.0.1', port: 0 });
  adminUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await stack?.close();
});

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

function cli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      TSX,
      ['tools/cli/src/main.ts', 'admin', ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ADMIN_URL: adminUrl, ADMIN_TOKEN: TOKEN, ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : -1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe('admin CLI against the admin API', () => {
  it('creates an account and a key, lists and revokes the key', async () => {
    const created = await cli(['accounts', 'create', '--name', 'CLI Corp', '--plan', 'pro']);
    expect(created).toMatchObject({ code: 0, stderr: '' });
    const accountId = /^created account (acc_[0-9A-Za-z]{20})$/m.exec(created.stdout)?.[1] ?? '';
    expect(accountId).not.toBe('');
    expect(created.stdout).toMatch(/plan: +pro/);
    expect(stack.controlPlane.accountById(accountId)).toMatchObject({ name: 'CLI Corp', plan: 'pro' });

    const keyCreated = await cli(['keys', 'create', accountId, '--name', 'ci']);
    expect(keyCreated.code).toBe(0);
    const plaintext = /^ {2}(svc_live_[0-9A-Za-z]{43})$/m.exec(keyCreated.stdout)?.[1] ?? '';
    expect(plaintext).not.toBe('');
    expect(keyCreated.stdout).toContain('will not be shown again');
    const keyId = /created API key (key_[0-9A-Za-z]{20}) \(ci\)/.exec(keyCreated.stdout)?.[1] ?? '';
    expect(stack.controlPlane.apiKeyByHash(hashApiKey(plaintext))?.id).toBe(keyId);

    const listed = await cli(['keys', 'list', accountId]);
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${keyId} +ci +${plaintext.slice(0, 15)} +secret +events:write,usage:read +\\S+ +active`));
    expect(listed.stdout).not.toContain(plaintext);

    const revoked = await cli(['keys', 'revoke', accountId, keyId]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toMatch(new RegExp(`^revoked API key ${keyId} \\(ci\\) of account ${accountId} at \\S+Z\\n$`));
    expect(stack.controlPlane.apiKeyByHash(hashApiKey(plaintext))?.revokedAt).not.toBeNull();

    const json = await cli(['keys', 'list', accountId, '--json']);
    expect(json.code).toBe(0);
    const body = JSON.parse(json.stdout) as { keys: { id: string; revokedAt: string | null }[] };
    expect(body.keys).toEqual([expect.objectContaining({ id: keyId, revokedAt: expect.any(String) })]);
    expect(json.stdout).not.toContain('hash');
  });

  it('fails with exit code 1 and the problem on a wrong token', async () => {
    const result = await cli(['accounts', 'list'], { ADMIN_TOKEN: 'not-the-token' });
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/^error: 401 Missing or invalid API key: Send an admin token/m);
    expect(result.stdout).toBe('');
  });

  it('fails with exit code 1 on an unknown account, and 2 on a usage error', async () => {
    const unknown = await cli(['keys', 'list', 'acc_doesnotexist']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/^error: 404 Not found: Account acc_doesnotexist does not exist\./m);

    const usage = await cli(['plan', 'set', 'acc_x', 'platinum']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('unknown plan "platinum"');
  });
});
