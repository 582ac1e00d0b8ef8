/**
 * The tenant mix's accounts, created through the real admin API (the console's admin listener)
 * like an operator's tooling would: an account on its plan and one API key each, `concurrency`
 * at a time, then every key checked on the public API (GET /v1/usage) until the gateway's
 * control plane knows it.
 */
import type { Plan } from '@ingest/domain';
import type { HttpClient } from './http-client.js';
import { sleep } from './processes.js';
import type { MixAccount } from './tenant-mix.js';

export interface CreatedTenant extends MixAccount {
  accountId: string;
  apiKey: string;
}

async function pool<T, R>(items: T[], concurrency: number, work: (item: T) => Promise<R>, signal: AbortSignal): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        signal.throwIfAborted();
        const i = next++;
        out[i] = await work(items[i] as T);
      }
    }),
  );
  return out;
}

export async function createTenants(o: {
  admin: HttpClient;
  http: HttpClient;
  adminToken: string;
  mix: MixAccount[];
  namePrefix: string;
  concurrency: number;
  signal: AbortSignal;
  onProgress?: (created: number) => void;
}): Promise<CreatedTenant[]> {
  const auth = { authorization: `Bearer ${o.adminToken}` };
  let created = 0;
  const tenants = await pool(
    o.mix,
    o.concurrency,
    async (m): Promise<CreatedTenant> => {
      const plan: Plan = m.plan;
      const account = await o.admin.request('POST', '/admin/v1/accounts', {
        body: JSON.stringify({ name: `${o.namePrefix} rank ${m.rank}`, plan }),
        headers: auth,
      });
      if (account.status !== 201) throw new Error(`POST /admin/v1/accounts answered ${account.status}: ${account.body.slice(0, 300)}`);
      const accountId = (JSON.parse(account.body) as { id: string }).id;
      const key = await o.admin.request('POST', `/admin/v1/accounts/${accountId}/keys`, { body: JSON.stringify({ name: 'bench' }), headers: auth });
      if (key.status !== 201) throw new Error(`POST /admin/v1/accounts/${accountId}/keys answered ${key.status}: ${key.body.slice(0, 300)}`);
      if (++created % 250 === 0) o.onProgress?.(created);
      return { ...m, accountId, apiKey: (JSON.parse(key.body) as { apiKey: string }).apiKey };
    },
    o.signal,
  );
  // The gateway reads keys from the compacted control topics: wait until it accepts every one.
  await pool(
    tenants,
    o.concurrency,
    async (t) => {
      const deadline = Date.now() + 60_000;
      for (;;) {
        const usage = await o.http.request('GET', '/v1/usage', { headers: { authorization: `Bearer ${t.apiKey}` } });
        if (usage.status === 200) return;
        if (Date.now() > deadline) throw new Error(`the key of ${t.accountId} was still refused after 60 s (GET /v1/usage answered ${usage.status})`);
        await sleep(200, o.signal);
      }
    },
    o.signal,
  );
  return tenants;
}
