/**
 * The demo account of `npm start`: created once through the admin API and remembered in
 * .local/demo-account.json (an ignored, local-only file: it holds the demo key in plain text
 * so it can be printed on every start). Recreated when the account or key no longer works.
 * The account also gets a dashboard owner whose password is kept there for the same reason.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname, join } from 'node:path';

interface Demo {
  accountId: string;
  keyId: string;
  apiKey: string;
  ownerEmail?: string;
  ownerPassword?: string;
}

const adminUrl = process.env.ADMIN_URL ?? 'http://127.0.0.1:3200';
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
  const key = await admin<{ apiKey: string; key: { id: string } }>('POST', `/accounts/${account.body.id}/keys`, {
    name: 'demo',
    scopes: ['events:write', 'events:read', 'usage:read'],
  });
  if (key.status !== 201) throw new Error(`could not create the demo key: ${JSON.stringify(key.body)}`);
  return { accountId: account.body.id, keyId: key.body.key.id, apiKey: key.body.apiKey };
}

/** The demo owner, created when the account has none we know the password of. Emails are unique across accounts, hence the account in it. */
async function ensureOwner(demo: Demo): Promise<Demo> {
  const owners = await admin<{ owners?: { email: string }[] }>('GET', `/accounts/${demo.accountId}/owners`);
  if (demo.ownerEmail && demo.ownerPassword && (owners.body.owners ?? []).some((o) => o.email === demo.ownerEmail)) return demo;
  const ownerEmail = `demo+${demo.accountId.slice(4).toLowerCase()}-${randomBytes(3).toString('hex')}@example.com`;
  const ownerPassword = randomBytes(12).toString('base64url');
  const created = await admin('POST', `/accounts/${demo.accountId}/owners`, { email: ownerEmail, password: ownerPassword });
  if (created.status !== 201) throw new Error(`could not create the demo owner: ${JSON.stringify(created.body)}`);
  return { ...demo, ownerEmail, ownerPassword };
}

const saved: Demo | undefined = existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as Demo) : undefined;
let demo = saved && (await stillValid(saved)) ? saved : await create();
demo = await ensureOwner(demo);
if (demo !== saved) {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(demo, null, 2)}\n`, { mode: 0o600 });
}
console.log(`DEMO_ACCOUNT_ID=${demo.accountId}`);
console.log(`DEMO_API_KEY=${demo.apiKey}`);
console.log(`DEMO_OWNER_EMAIL=${demo.ownerEmail ?? ''}`);
console.log(`DEMO_OWNER_PASSWORD=${demo.ownerPassword ?? ''}`);
