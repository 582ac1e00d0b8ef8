/**
 * Real servers: Kafka (the control plane's compacted topics). The CRM credentials admin API: secrets never
 * returned nor echoed, URL checks, deletion, the admin token.
 * The HTTP side runs in-process through fastify's inject (crm.routes.fixture.ts).
 */
import { createOutboundPolicy } from '@ingest/domain';
import { testCredentialKeys } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import { auth, base, expectProblem, mapping, useCrmRoutes } from './crm.routes.fixture.js';

const crm = useCrmRoutes();

describe('deleting credentials', () => {
  it('deletes a credential with a tombstone, refusing while the current mapping uses it', async () => {
    const accountId = await crm.newAccount();
    const hooks = { type: 'webhook', url: 'https://hooks.example.com/in', secret: 'whsec_delete_me' };
    expect((await crm.app.inject({ method: 'PUT', url: `${base(accountId)}/credentials/hooks`, headers: auth, payload: hooks })).statusCode).toBe(200);
    expect((await crm.putMapping(accountId, { ...mapping, crm: { type: 'webhook', credentialsRef: 'hooks' } })).statusCode).toBe(201);
    const inUse = expectProblem(
      await crm.app.inject({ method: 'DELETE', url: `${base(accountId)}/credentials/hooks`, headers: auth }),
      409,
      '/problems/conflict',
    );
    expect(inUse.detail).toMatch(/mapping version 1 syncs with credential hooks/);
    expect((await crm.app.inject({ method: 'DELETE', url: `${base(accountId)}/mapping`, headers: auth })).statusCode).toBe(200);
    const gone = await crm.app.inject({ method: 'DELETE', url: `${base(accountId)}/credentials/hooks`, headers: auth });
    expect(gone.statusCode).toBe(200);
    expect(gone.json()).toEqual({ accountId, name: 'hooks', deleted: true });
    expect(crm.stack.controlPlane.crmCredential(accountId, 'hooks')).toBeUndefined();
    expect((await crm.app.inject({ method: 'GET', url: `${base(accountId)}/credentials`, headers: auth })).json()).toEqual({ credentials: [] });
    expectProblem(await crm.app.inject({ method: 'DELETE', url: `${base(accountId)}/credentials/hooks`, headers: auth }), 404, '/problems/not-found');
  });
});

describe('CRM credentials admin API', () => {
  it('stores credentials and never returns or echoes their secrets', async () => {
    const accountId = await crm.newAccount();
    const secrets = ['pat-na1-SECRET-1', 'whsec_SECRET_2', 'whsec_PREVIOUS_3'];
    const put = await crm.app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/main`,
      headers: auth,
      payload: { type: 'hubspot', accessToken: secrets[0], baseUrl: 'https://hubspot.example.com:9999' },
    });
    expect(put.statusCode).toBe(200);
    expect(put.json()).toEqual({ name: 'main', type: 'hubspot', baseUrl: 'https://hubspot.example.com:9999', updatedAt: expect.any(String) });
    await crm.app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/hooks`,
      headers: auth,
      payload: { type: 'webhook', url: 'https://example.com/h', secret: secrets[1], previousSecret: secrets[2] },
    });

    const list = await crm.app.inject({ method: 'GET', url: `${base(accountId)}/credentials`, headers: auth });
    expect(list.statusCode).toBe(200);
    expect(list.json()).toEqual({
      credentials: [
        { name: 'hooks', type: 'webhook', url: 'https://example.com/h', signsWithPreviousSecret: true, updatedAt: expect.any(String) },
        { name: 'main', type: 'hubspot', baseUrl: 'https://hubspot.example.com:9999', updatedAt: expect.any(String) },
      ],
    });
    for (const s of secrets) expect(put.payload + list.payload).not.toContain(s);
    // The gateway's control plane holds the secret sealed; the sink's private key opens it.
    const stored = crm.stack.controlPlane.crmCredential(accountId, 'main');
    expect(JSON.stringify(stored)).not.toContain(secrets[0]);
    expect(stored && testCredentialKeys().opener(stored)).toMatchObject({ accessToken: secrets[0] });
  });

  it.each([
    ['the cloud metadata service', 'http://169.254.169.254/latest/meta-data/', 'scheme_not_allowed'],
    ['the cloud metadata service over https', 'https://169.254.169.254/latest/meta-data/', 'address_not_allowed'],
    ['loopback', 'https://127.0.0.1:3102/metrics', 'address_not_allowed'],
    ['loopback by name', 'https://localhost/hook', 'address_not_allowed'],
    ['an RFC 1918 address', 'https://10.0.0.7/hook', 'address_not_allowed'],
    ['an IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hook', 'address_not_allowed'],
    ['a unique-local IPv6 address', 'https://[fd00::1]/hook', 'address_not_allowed'],
    ['plain http', 'http://hooks.example.com/in', 'scheme_not_allowed'],
  ])('regression (SSRF): refuses a webhook URL pointing at %s with a 400 naming the reason, and stores nothing', async (_what, url, code) => {
    const accountId = await crm.newAccount();
    const res = await crm.app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/hooks`,
      headers: auth,
      payload: { type: 'webhook', url, secret: 'whsec_x' },
    });
    const body = expectProblem(res, 400, '/problems/validation-error');
    expect(body.detail).toMatch(/^The credential's url is refused by the outbound address policy: /);
    expect(body.errors).toEqual([{ field: '/url', code, message: expect.any(String) }]);
    expect(crm.stack.controlPlane.crmCredential(accountId, 'hooks')).toBeUndefined();
  });

  it('checks baseUrl and instanceUrl too, listing the other errors of the credential with them', async () => {
    const accountId = await crm.newAccount();
    const hubspot = await crm.app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/main`,
      headers: auth,
      payload: { type: 'hubspot', accessToken: 't', baseUrl: 'https://192.168.1.10' },
    });
    expect(expectProblem(hubspot, 400, '/problems/validation-error').errors).toEqual([
      { field: '/baseUrl', code: 'address_not_allowed', message: expect.stringContaining('private (RFC 1918)') },
    ]);
    const salesforce = await crm.app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/sf`,
      headers: auth,
      payload: { type: 'salesforce', instanceUrl: 'https://100.64.1.1' },
    });
    expect((expectProblem(salesforce, 400, '/problems/validation-error').errors as { field: string; code: string }[]).map((e) => [e.field, e.code])).toEqual([
      ['/accessToken', 'required'],
      ['/instanceUrl', 'address_not_allowed'],
    ]);
  });

  it('lets an operator allow plain http and loopback (CRM_ALLOW_HTTP, CRM_ALLOWED_CIDRS) for a local fake CRM', async () => {
    const local = await crm.stack.app('local-admin-token-0123456789abcdefghij', {
      outboundPolicy: createOutboundPolicy({ allowHttp: true, allowedCidrs: '127.0.0.1/32' }),
    });
    const accountId = await crm.newAccount();
    const headers = { authorization: 'Bearer local-admin-token-0123456789abcdefghij' };
    const ok = await local.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/hooks`,
      headers,
      payload: { type: 'webhook', url: 'http://127.0.0.1:4000/webhook/a', secret: 'whsec_x' },
    });
    expect(ok.statusCode).toBe(200);
    const metadata = await local.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/meta`,
      headers,
      payload: { type: 'webhook', url: 'http://169.254.169.254/latest/meta-data/', secret: 'whsec_x' },
    });
    expectProblem(metadata, 400, '/problems/validation-error');
  });

  it('refuses an invalid credential with pointers, without echoing the secret', async () => {
    const accountId = await crm.newAccount();
    const res = await crm.app.inject({
      method: 'PUT',
      url: `${base(accountId)}/credentials/sf`,
      headers: auth,
      payload: { type: 'salesforce', accessToken: 'SECRET-SF', instanceUrl: 'not a url', password: 'x' },
    });
    const body = expectProblem(res, 400, '/problems/validation-error');
    expect((body.errors as { field: string }[]).map((e) => e.field).sort()).toEqual(['/instanceUrl', '/password']);
    expect(res.payload).not.toContain('SECRET-SF');
    expectProblem(
      await crm.app.inject({ method: 'PUT', url: `${base(accountId)}/credentials/bad%2Fname`, headers: auth, payload: { type: 'hubspot', accessToken: 't' } }),
      400,
      '/problems/validation-error',
    );
  });

  it('regression: a body that is not an object (null, absent, an array item that is not an action) is a 400, not a 500', async () => {
    const accountId = await crm.newAccount();
    const credentials = `${base(accountId)}/credentials/main`;
    const json = { ...auth, 'content-type': 'application/json' };
    expectProblem(await crm.app.inject({ method: 'PUT', url: credentials, headers: auth }), 400, '/problems/validation-error');
    expectProblem(await crm.app.inject({ method: 'PUT', url: credentials, headers: json, payload: 'null' }), 400, '/problems/validation-error');
    expectProblem(
      await crm.app.inject({ method: 'PUT', url: `${base(accountId)}/mapping`, headers: json, payload: 'null' }),
      400,
      '/problems/validation-error',
    );
    await crm.putMapping(accountId, mapping);
    const rule = { ...mapping.rules[1], actions: [[null, null], null] };
    const body = expectProblem(
      await crm.app.inject({
        method: 'POST',
        url: `${base(accountId)}/mapping/dry-run`,
        headers: auth,
        payload: { event: { eventName: 'x', email: 'a@b.co' }, mapping: { ...mapping, rules: [rule] } },
      }),
      400,
      '/problems/validation-error',
    );
    expect((body.errors as { field: string; code: string }[]).map((e) => [e.field, e.code])).toEqual([
      ['/mapping/rules/0/actions/0', 'invalid_type'],
      ['/mapping/rules/0/actions/1', 'invalid_type'],
    ]);
    expect(crm.stack.controlPlane.listCrmCredentials(accountId)).toEqual([]);
  });

  it('answers 401 without the admin token', async () => {
    const accountId = await crm.newAccount();
    for (const r of [
      { method: 'GET', url: `${base(accountId)}/credentials` },
      { method: 'GET', url: `${base(accountId)}/mapping` },
      { method: 'PUT', url: `${base(accountId)}/mapping`, payload: mapping },
    ] as const) {
      expectProblem(await crm.app.inject({ ...r, headers: { authorization: 'Bearer wrong' } }), 401, '/problems/unauthorized');
    }
    expect(crm.stack.controlPlane.mappingVersions(accountId)).toEqual([]);
  });
});
