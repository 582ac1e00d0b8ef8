// Servers: the fake CRM only (fastify on 127.0.0.1), over real HTTP.
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { createAccountRateLimiter } from '../rate/account-limiter.js';
import { AccountBlocked, createAccountCaller } from '../retry/crm-call.retry.js';
import { CrmError, type RecordWrite } from './adapter.js';
import { SALESFORCE_MAX_QUERY_PAGES, createSalesforceAdapter } from './salesforce.adapter.js';

/**
 * Issue 26 item 4, bounded CRM calls: Salesforce pagination has a page cap and follows only this
 * instance's query locators, and a call the account's hold gave up on sends nothing more.
 */
const TOKEN = 'sf-session-00D000000000026';
let crm: FakeCrm;
let salesforce: ReturnType<typeof createSalesforceAdapter>;

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [TOKEN] });
  salesforce = createSalesforceAdapter({ type: 'salesforce', accessToken: TOKEN, instanceUrl: crm.url }, { outboundPolicy: FAKE_CRM_OUTBOUND });
});
afterAll(async () => {
  await salesforce.close();
  await crm.stop();
});
beforeEach(() => crm.reset());

const contacts = (n: number): RecordWrite[] =>
  Array.from({ length: n }, (_, i) => ({ object: 'contact', key: `p${i}@example.com`, properties: { LastName: `P${i}` } }));
const queries = () => crm.calls.filter((c) => c.method === 'GET' && c.path.includes('/query'));

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => {
      throw new Error('expected a rejection');
    },
    (e: unknown) => e,
  );
}

describe('Salesforce pagination', () => {
  it('follows nextRecordsUrl of this instance to the last page', async () => {
    await salesforce.upsert('contact', contacts(5));
    crm.salesforcePaging({ pageSize: 2 });
    const found = await salesforce.read(
      'contact',
      contacts(5).map((c) => c.key),
      ['LastName'],
    );
    expect([...found.keys()].sort()).toEqual(contacts(5).map((c) => c.key));
    expect(queries().map((c) => c.path.replace(/\?.*/, ''))).toEqual([
      '/services/data/v60.0/query',
      expect.stringMatching(/^\/services\/data\/v60\.0\/query\/01gFAKE\d+-2$/),
      expect.stringMatching(/^\/services\/data\/v60\.0\/query\/01gFAKE\d+-4$/),
    ]);
  });

  it('an instance answering done: false forever gets at most the page cap of requests, then a permanent failure', async () => {
    crm.salesforcePaging({ endless: true });
    const err = await rejection(salesforce.read('contact', ['a@example.com'], ['LastName']));
    expect(err).toBeInstanceOf(CrmError);
    expect(err).toMatchObject({ kind: 'permanent', message: expect.stringContaining(`${SALESFORCE_MAX_QUERY_PAGES} pages`) as string });
    expect(queries()).toHaveLength(SALESFORCE_MAX_QUERY_PAGES);
  });

  it('a nextRecordsUrl elsewhere (another host, another path) is never requested', async () => {
    for (const elsewhere of [
      'https://attacker.example/services/data/v60.0/query/01g-2',
      '/services/apexrest/steal',
      '/services/data/v60.0/query/../../x',
      '//attacker.example/q',
    ]) {
      crm.reset();
      crm.salesforcePaging({ endless: true, nextRecordsUrl: elsewhere });
      const err = await rejection(salesforce.read('contact', ['a@example.com'], ['LastName']));
      expect(err, elsewhere).toMatchObject({ kind: 'permanent', message: expect.stringContaining('nextRecordsUrl') as string });
      expect(
        crm.calls.map((c) => c.path.replace(/\?.*/, '')),
        elsewhere,
      ).toEqual(['/services/data/v60.0/query']);
    }
  });

  it('no page request after the account hold gave up on the call', async () => {
    crm.salesforcePaging({ endless: true });
    // Every page answers after 100 ms: pages keep coming, each within the hold, the whole read never ends.
    crm.failNext({ crm: 'salesforce', delayMs: 100, times: 1000 });
    const caller = createAccountCaller({
      limiter: createAccountRateLimiter({ rate: { ratePerSecond: 1000, burst: 1000 } }),
      retry: { maxAttempts: 3, budgetMs: 60_000, baseDelayMs: 10, maxDelayMs: 100 },
      hold: { holdMs: 350, maxRetryAfterMs: 60_000 },
      events: { onRetry: () => undefined, onPause: () => undefined },
    });
    let inner: Promise<unknown> | undefined;
    const blocked = await rejection(
      caller.call((signal) => {
        inner = salesforce.read('contact', ['a@example.com'], ['LastName'], signal);
        return inner;
      }, new AbortController().signal),
    );
    expect(blocked).toBeInstanceOf(AccountBlocked);
    const atHold = crm.calls.length;
    expect(atHold).toBeGreaterThanOrEqual(2);
    expect(atHold).toBeLessThan(SALESFORCE_MAX_QUERY_PAGES);
    // The abandoned read ends by itself (the hold's abort), rather than paging on in the background.
    expect(await rejection(inner as Promise<unknown>)).toBe(blocked);
    expect(crm.calls.length, 'page requests after the hold').toBe(atHold);
    // The adapter's pool is still usable for the next call.
    crm.reset();
    expect(await salesforce.read('contact', ['a@example.com'], ['LastName'])).toEqual(new Map());
  });

  it('a call aborted before it starts sends nothing', async () => {
    const abort = new AbortController();
    abort.abort(new Error('stopping'));
    expect(await rejection(salesforce.upsert('contact', contacts(1), abort.signal))).toMatchObject({ message: 'stopping' });
    expect(crm.calls).toEqual([]);
  });
});
