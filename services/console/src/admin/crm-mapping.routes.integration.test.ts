/**
 * Real servers: Kafka (the control plane's compacted topics). The CRM mapping admin API: versions, validation,
 * If-Match, deletion.
 * The HTTP side runs in-process through fastify's inject (crm.routes.fixture.ts).
 */
import { describe, expect, it } from 'vitest';
import { auth, base, expectProblem, mapping, useCrmRoutes } from './crm.routes.fixture.js';

const crm = useCrmRoutes();

describe('CRM mapping admin API', () => {
  it('stores versions (201, ETag), shows the current one and every version newest first', async () => {
    const accountId = await crm.newAccount();
    expectProblem(await crm.app.inject({ method: 'GET', url: `${base(accountId)}/mapping`, headers: auth }), 404, '/problems/not-found');

    const first = await crm.putMapping(accountId, mapping);
    expect(first.statusCode).toBe(201);
    expect(first.headers.etag).toBe('"1"');
    expect(first.json()).toMatchObject({ accountId, version: 1, author: 'admin', mapping });
    const second = await crm.putMapping(accountId, { ...mapping, rules: mapping.rules.slice(0, 1) });
    expect(second.json()).toMatchObject({ version: 2 });

    const current = await crm.app.inject({ method: 'GET', url: `${base(accountId)}/mapping`, headers: auth });
    expect(current.statusCode).toBe(200);
    expect(current.headers.etag).toBe('"2"');
    expect(current.json()).toEqual(second.json());

    const versions = await crm.app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions`, headers: auth });
    expect(versions.statusCode).toBe(200);
    const list = versions.json() as { versions: { version: number; author: string; createdAt: string }[] };
    expect(list.versions.map((v) => [v.version, v.author])).toEqual([
      [2, 'admin'],
      [1, 'admin'],
    ]);
    expect(list.versions.every((v) => !Number.isNaN(Date.parse(v.createdAt)))).toBe(true);

    const one = await crm.app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions/1`, headers: auth });
    expect(one.statusCode).toBe(200);
    expect(one.json()).toEqual(first.json());
    expectProblem(await crm.app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions/3`, headers: auth }), 404, '/problems/not-found');
    expectProblem(await crm.app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions/0`, headers: auth }), 400, '/problems/validation-error');
  });

  it('refuses an invalid document with 400 and every error as a JSON Pointer, storing nothing', async () => {
    const accountId = await crm.newAccount();
    const bad = {
      version: 1,
      crm: { type: 'hubspot', credentialsRef: 'svc_live_abc' },
      rules: [
        { id: 'a', when: { eventName: 'x' }, object: 'contact', actions: [{ op: 'multiply', field: 'n' }] },
        {
          id: 'a',
          when: { eventName: 'x', where: [{ property: 'p', op: 'gt', value: 'high' }] },
          object: 'company',
          actions: [{ op: 'increment', field: 'n' }],
        },
      ],
      extra: true,
    };
    const body = expectProblem(await crm.putMapping(accountId, bad), 400, '/problems/validation-error');
    expect((body.errors as { field: string; code: string }[]).map((e) => [e.field, e.code])).toEqual([
      ['/extra', 'unknown_field'],
      ['/rules/0/actions/0/op', 'invalid_value'],
    ]);

    // Once the shape is right, the rules a schema cannot say are checked, again all at once.
    const semantic = { ...bad, extra: undefined, rules: [bad.rules[1], bad.rules[1]] };
    const body2 = expectProblem(await crm.putMapping(accountId, JSON.parse(JSON.stringify(semantic))), 400, '/problems/validation-error');
    expect((body2.errors as { field: string; code: string }[]).map((e) => [e.field, e.code])).toEqual([
      ['/crm/credentialsRef', 'looks_like_secret'],
      ['/rules/0/when/where/0/value', 'invalid_value'],
      ['/rules/1/id', 'duplicate'],
      ['/rules/1/when/where/0/value', 'invalid_value'],
    ]);
    expect(JSON.stringify(body2)).not.toContain('svc_live_abc');
    expectProblem(
      await crm.app.inject({ method: 'PUT', url: `${base(accountId)}/mapping`, headers: { ...auth, 'content-type': 'application/json' }, payload: '[1]' }),
      400,
      '/problems/validation-error',
    );
    expect(crm.stack.controlPlane.mappingVersions(accountId)).toEqual([]);
  });

  it('checks a save against the CRM unless told to skip: refused with the reason when no credential or no channel can answer', async () => {
    const accountId = await crm.newAccount();
    const put = () => crm.app.inject({ method: 'PUT', url: `${base(accountId)}/mapping`, headers: auth, payload: mapping });
    const noCredential = expectProblem(await put(), 400, '/problems/validation-error');
    expect(noCredential.errors).toEqual([{ field: '/crm/credentialsRef', code: 'unknown_credential', message: 'no CRM connection named "main" is stored' }]);
    await crm.app.inject({ method: 'PUT', url: `${base(accountId)}/credentials/main`, headers: auth, payload: { type: 'hubspot', accessToken: 't' } });
    // This stack has no connection channel to crm-sink (CRM_SINK_INTERNAL_TOKEN empty).
    const noChannel = expectProblem(await put(), 503, '/problems/unavailable');
    expect(noChannel.detail).toMatch(/^The mapping was not checked against the CRM, so it was not saved: Connection checks are not configured/);
    expect(crm.stack.controlPlane.mappingVersions(accountId)).toEqual([]);
    expect((await crm.putMapping(accountId, mapping)).statusCode).toBe(201);
  });

  it('answers 404 for an unknown account on every route', async () => {
    const accountId = 'acc_doesnotexist';
    expectProblem(await crm.putMapping(accountId, mapping), 404, '/problems/not-found');
    for (const url of [
      `${base(accountId)}/mapping`,
      `${base(accountId)}/mapping/versions`,
      `${base(accountId)}/mapping/versions/1`,
      `${base(accountId)}/credentials`,
    ]) {
      expectProblem(await crm.app.inject({ method: 'GET', url, headers: auth }), 404, '/problems/not-found');
    }
    const dryRun = await crm.app.inject({
      method: 'POST',
      url: `${base(accountId)}/mapping/dry-run`,
      headers: auth,
      payload: { event: { eventName: 'x', email: 'a@b.co' } },
    });
    expectProblem(dryRun, 404, '/problems/not-found');
    expectProblem(
      await crm.app.inject({ method: 'PUT', url: `${base(accountId)}/credentials/main`, headers: auth, payload: { type: 'hubspot', accessToken: 't' } }),
      404,
      '/problems/not-found',
    );
  });

  it('honours If-Match: 412 with the current version when stale, 201 when current', async () => {
    const accountId = await crm.newAccount();
    const noneYet = expectProblem(await crm.putMapping(accountId, mapping, { 'if-match': '"1"' }), 412, '/problems/precondition-failed');
    expect(noneYet.currentVersion).toBeNull();
    expectProblem(await crm.putMapping(accountId, mapping, { 'if-match': '*' }), 412, '/problems/precondition-failed');
    await crm.putMapping(accountId, mapping);
    await crm.putMapping(accountId, mapping);

    const stale = expectProblem(await crm.putMapping(accountId, mapping, { 'if-match': '"1"' }), 412, '/problems/precondition-failed');
    expect(stale.currentVersion).toBe(2);
    const malformed = expectProblem(await crm.putMapping(accountId, mapping, { 'if-match': 'garbage' }), 400, '/problems/validation-error');
    expect(malformed.errors).toEqual([expect.objectContaining({ field: '/headers/if-match', code: 'invalid_format' })]);
    // A broken document hears that it is broken, not that it is stale.
    expectProblem(await crm.putMapping(accountId, { ...mapping, rules: [] }, { 'if-match': '"1"' }), 400, '/problems/validation-error');
    expect(crm.stack.controlPlane.currentMapping(accountId)?.version).toBe(2);

    const ok = await crm.putMapping(accountId, mapping, { 'if-match': '"2"' });
    expect(ok.statusCode).toBe(201);
    expect(ok.json()).toMatchObject({ version: 3 });
    expect((await crm.putMapping(accountId, mapping, { 'if-match': '*' })).statusCode).toBe(201);
  });
});

describe('deleting mappings', () => {
  it('deletes a mapping as a new version that stops sync, keeps its history, and lets a later PUT start again', async () => {
    const accountId = await crm.newAccount();
    expect((await crm.putMapping(accountId, mapping)).statusCode).toBe(201);
    expectProblem(
      await crm.app.inject({ method: 'DELETE', url: `${base(accountId)}/mapping`, headers: { ...auth, 'if-match': '"7"' } }),
      412,
      '/problems/precondition-failed',
    );
    const deleted = await crm.app.inject({ method: 'DELETE', url: `${base(accountId)}/mapping`, headers: { ...auth, 'if-match': '"1"' } });
    expect(deleted.statusCode).toBe(200);
    expect(deleted.json()).toEqual({ accountId, version: 2, deleted: true, author: 'admin', createdAt: expect.any(String) });
    // The sink and the dry-run see no mapping; the history shows the deletion.
    expect(crm.stack.controlPlane.currentMapping(accountId)).toBeUndefined();
    const current = expectProblem(await crm.app.inject({ method: 'GET', url: `${base(accountId)}/mapping`, headers: auth }), 404, '/problems/not-found');
    expect(current.detail).toMatch(/was deleted in version 2/);
    const versions = await crm.app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions`, headers: auth });
    expect(versions.json().versions.map((v: { version: number; deleted?: boolean }) => [v.version, v.deleted ?? false])).toEqual([
      [2, true],
      [1, false],
    ]);
    expect((await crm.app.inject({ method: 'GET', url: `${base(accountId)}/mapping/versions/2`, headers: auth })).json()).toMatchObject({
      version: 2,
      deleted: true,
      mapping: { crm: mapping.crm, rules: [] },
    });
    expectProblem(await crm.app.inject({ method: 'DELETE', url: `${base(accountId)}/mapping`, headers: auth }), 404, '/problems/not-found');
    const again = await crm.putMapping(accountId, mapping, { 'if-match': '"2"' });
    expect(again.statusCode).toBe(201);
    expect(again.json()).toMatchObject({ version: 3 });
    expect(crm.stack.controlPlane.currentMapping(accountId)?.version).toBe(3);
  });
});
