import type { CrmCredential, StoredCrmCredential } from '@ingest/domain';
import type { ConnectionTestResult } from '@ingest/schemas';
import { testLogger } from '@ingest/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { createConnectionServer } from './connection.server.js';

const TOKEN = 'k'.repeat(40);
const stored = (accessToken: string, updatedAt: string): StoredCrmCredential =>
  ({ accountId: 'acc', name: 'hs', updatedAt, credential: { type: 'hubspot' }, plaintextSecrets: { accessToken } }) as unknown as StoredCrmCredential;

let stop: (() => Promise<void>) | undefined;
afterEach(async () => {
  await stop?.();
});

/** A channel whose control plane shows `initial` and, after `switchAfterMs`, `later`: a crm-sink that has not yet read the console's write. */
async function lagging(initial: StoredCrmCredential, later: StoredCrmCredential, switchAfterMs: number) {
  let current = initial;
  const tested: string[] = [];
  const server = createConnectionServer({
    host: '127.0.0.1',
    port: 0,
    tokens: [TOKEN],
    credentials: { crmCredential: () => current },
    openCredential: (s) =>
      ({ type: 'hubspot', accessToken: (s as unknown as { plaintextSecrets: { accessToken: string } }).plaintextSecrets.accessToken }) as CrmCredential,
    checks: {
      test: async (c) => {
        tested.push((c as { accessToken: string }).accessToken);
        return { v: 1, ok: true, crm: 'hubspot', outcome: 'connected', status: 200, message: 'ok', checkedAt: 'now' };
      },
      properties: async () => ({ failure: { outcome: 'failed', message: 'unused' } }),
    },
    takeToken: () => async () => 0,
    freshnessWaitMs: 4_000,
    logger: testLogger(),
  });
  await server.start();
  stop = () => server.stop();
  setTimeout(() => (current = later), switchAfterMs).unref();
  const test = async (body: Record<string, unknown>) =>
    (await (
      await fetch(`http://127.0.0.1:${server.port}/internal/v1/connections/test`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
        body: JSON.stringify(body),
      })
    ).json()) as ConnectionTestResult;
  return { tested, test, port: server.port };
}

describe('the connection channel and a control plane that lags behind the console', () => {
  it('waits for the record the console stored (updatedAt) and tests its secret', async () => {
    const { tested, test } = await lagging(stored('tok-old', '2026-11-27T10:00:00.000Z'), stored('tok-new', '2026-11-27T10:00:05.000Z'), 1_000);
    expect((await test({ accountId: 'acc', name: 'hs', updatedAt: '2026-11-27T10:00:05.000Z' })).ok).toBe(true);
    expect(tested).toEqual(['tok-new']);
  });

  it('without updatedAt, tests what it holds at once', async () => {
    const { tested, test } = await lagging(stored('tok-old', '2026-11-27T10:00:00.000Z'), stored('tok-new', '2026-11-27T10:00:05.000Z'), 1_000);
    await test({ accountId: 'acc', name: 'hs' });
    expect(tested).toEqual(['tok-old']);
  });
});

describe("the connection channel's token", () => {
  it('answers 401 to a missing, wrong or prefixed token and tests nothing', async () => {
    const { tested, port } = await lagging(stored('tok', '2026-11-27T10:00:00.000Z'), stored('tok', '2026-11-27T10:00:00.000Z'), 60_000);
    for (const authorization of [undefined, 'Bearer wrong', `Bearer ${TOKEN}x`, `Bearer ${TOKEN.slice(1)}`, TOKEN]) {
      const res = await fetch(`http://127.0.0.1:${port}/internal/v1/connections/test`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) },
        body: JSON.stringify({ accountId: 'acc', name: 'hs' }),
      });
      expect(res.status, String(authorization)).toBe(401);
    }
    expect(tested).toEqual([]);
  });
});
