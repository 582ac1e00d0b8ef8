/**
 * A connection check of an OAuth credential uses the sink's current access token (its token
 * manager, `bearerFor`), not the token the connection record was stored with: once the sink has
 * refreshed, the record's token is expired, and a test with it would say "refused" while sync
 * works. Against the fake HubSpot over HTTP, which accepts only the current token.
 */
import type { CrmCredential } from '@ingest/domain';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BearerSource } from '../adapters/http.client.js';
import { createConnectionChecks } from './connection.checks.js';

const CURRENT = 'tok-refreshed-by-the-sink';
let crm: FakeCrm;
let credential: CrmCredential;

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [CURRENT] });
  // The record's token: what the console stored at connect time, long since replaced.
  credential = { type: 'hubspot', accessToken: 'tok-from-the-connection-record', baseUrl: crm.url } as CrmCredential;
});

afterAll(async () => {
  await crm?.stop();
});

const checks = () => createConnectionChecks({ outboundPolicy: FAKE_CRM_OUTBOUND, requestTimeoutMs: 5_000 });

describe('connection checks of an OAuth credential', () => {
  it("test and properties send the token manager's current token", async () => {
    const refreshes: string[] = [];
    const bearer: BearerSource = {
      token: async () => CURRENT,
      refreshAfterUnauthorized: async (rejected) => {
        refreshes.push(rejected);
        return CURRENT;
      },
    };
    const result = await checks().test(credential, bearer);
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, outcome: 'connected', status: 200 });
    const props = await checks().properties(credential, 'contact', bearer);
    expect('list' in props, JSON.stringify(props)).toBe(true);
    expect(refreshes).toEqual([]);
  });

  it('without the token source the record token is sent, and the fake HubSpot refuses it (the case the source exists for)', async () => {
    const result = await checks().test(credential);
    expect(result, JSON.stringify(result)).toMatchObject({ ok: false, outcome: 'refused', status: 401 });
  });

  it('a token refused with 401 is refreshed once through the source and the call sent again', async () => {
    const refreshes: string[] = [];
    const bearer: BearerSource = {
      token: async () => 'tok-expired-meanwhile',
      refreshAfterUnauthorized: async (rejected) => {
        refreshes.push(rejected);
        return CURRENT;
      },
    };
    const result = await checks().test(credential, bearer);
    expect(result, JSON.stringify(result)).toMatchObject({ ok: true, outcome: 'connected' });
    expect(refreshes).toEqual(['tok-expired-meanwhile']);
  });
});
