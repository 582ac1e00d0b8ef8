/**
 * The demo account of `npm start`: created once through the admin API and remembered in
 * .local/demo-account.json (an ignored, local-only file: it holds the demo key in plain text
 * so it can be printed on every start). Recreated when the account or key no longer works.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

interface Demo {
  accountId: string;
  keyId: string;
  apiKey: string;
}

const adminUrl = process.env.ADMIN_URL ?? 'http://127.0.0.1:3000';
const token = process.env.ADMIN_TOKEN ?? '';
const file = join(process.env.STACK_DIR ?? join(import.meta.dirname, '..', '.local'), 'demo-account.json');

async function admin<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${adminUrl}/admin/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: (await res.json()) as T };
}

async function stillValid(demo: Demo): Promise<boolean> {
  const keys = await admin<{ keys?: { id: string; revokedAt: string | null }[] }>('GET', `/accounts/${demo.accountId}/keys`);
  return keys.status === 200 && (keys.body.keys ?? []).some((k) => k.id === demo.keyId && k.revokedAt === null);
}

async function create(): Promise<Demo> {
  const account = await admin<{ id: string }>('POST', '/accounts', { name: 'Demo Company', plan: 'pro' });
  if (account.status !== 201) throw new Error(`could not create the demo account: ${JSON.stringify(account.body)}`);
  const key = await admin<{ apiKey: string; key: { id: string } }>('POST', `/accounts/${account.body.id}/keys`, { name: 'demo' });
  if (key.status !== 201) throw new Error(`could not create the demo key: ${JSON.stringify(key.body)}`);
  return { accountId: account.body.id, keyId: key.body.key.id, apiKey: key.body.apiKey };
}

let demo: Demo | undefined = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Demo) : undefined;
if (!demo || !(await stillValid(demo))) {
  demo = await create();
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });
}
console.log(`DEMO_ACCOUNT_ID=${demo.accountId}`);
console.log(`DEMO_API_KEY=${demo.apiKey}`);
