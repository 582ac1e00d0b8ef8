import type { CrmMapping, CrmPropertyList, PropertiesRequest } from '@ingest/schemas';
import type { StoredCrmCredential } from '@ingest/domain';
import { ProblemError } from '@ingest/http';
import { describe, expect, it } from 'vitest';
import type { ConnectionChannel } from './connection-channel.client.js';
import { createMappingCrmCheck } from './mapping-crm.check.js';

const list = (object: 'contact' | 'company'): CrmPropertyList => ({
  v: 1,
  crm: 'hubspot',
  object,
  properties: [{ name: 'signups', label: 'Signups', type: 'number', readOnly: false }],
});

function fakeChannel(answer: (r: PropertiesRequest) => Promise<CrmPropertyList> = async (r) => list(r.object)) {
  const asked: PropertiesRequest[] = [];
  const channel: ConnectionChannel = {
    available: true,
    test: () => Promise.reject(new Error('not used')),
    properties: (r) => {
      asked.push(r);
      return answer(r);
    },
  };
  return { channel, asked };
}

const credential = (updatedAt: string, type: 'hubspot' | 'salesforce' = 'hubspot'): StoredCrmCredential =>
  ({
    accountId: 'acc_1',
    name: 'main',
    credential: type === 'hubspot' ? { type } : { type, instanceUrl: 'https://x.my.salesforce.com' },
    updatedAt,
  }) as StoredCrmCredential;

const mapping = (field: string, type: CrmMapping['crm']['type'] = 'hubspot'): CrmMapping => ({
  version: 1,
  crm: { type, credentialsRef: 'main' },
  rules: [{ id: 'r', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'increment', field }] }],
});

async function problemOf(work: Promise<unknown>): Promise<ProblemError> {
  const err = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProblemError);
  return err as ProblemError;
}

describe('the console mapping check', () => {
  it('asks for the objects the rules use once per credential version, then answers from the cache', async () => {
    let stored = credential('2026-01-01T00:00:00.000Z');
    const { channel, asked } = fakeChannel();
    const check = createMappingCrmCheck({ channel, controlPlane: { crmCredential: () => stored } });
    await check.check('acc_1', mapping('signups'));
    await check.check('acc_1', mapping('signups'));
    expect(asked).toEqual([{ accountId: 'acc_1', name: 'main', object: 'contact', updatedAt: '2026-01-01T00:00:00.000Z' }]);
    // A rotated secret is a new version: read afresh.
    stored = credential('2026-01-02T00:00:00.000Z');
    await check.check('acc_1', mapping('signups'));
    expect(asked).toHaveLength(2);
  });

  it('keeps at most maxEntries lists', async () => {
    const { channel } = fakeChannel();
    const check = createMappingCrmCheck({ channel, controlPlane: { crmCredential: (a) => ({ ...credential('t'), accountId: a }) }, maxEntries: 3 });
    for (let i = 0; i < 10; i++) await check.check(`acc_${i}`, mapping('signups'));
    expect(check.cachedLists()).toBe(3);
  });

  it('refuses unknown fields, a credential not stored and one for another CRM, with pointers', async () => {
    const { channel } = fakeChannel();
    const check = createMappingCrmCheck({ channel, controlPlane: { crmCredential: () => credential('t') } });
    const unknown = await problemOf(check.check('acc_1', mapping('signupz')));
    expect(unknown.kind).toBe('validation');
    expect(unknown.errors?.map((e) => e.code)).toEqual(['unknown_crm_field']);
    expect(unknown.detail).toContain('"signupz"');
    const mismatch = await problemOf(check.check('acc_1', mapping('signups', 'salesforce')));
    expect(mismatch.errors).toEqual([expect.objectContaining({ field: '/crm/type', code: 'credential_mismatch' })]);
    const none = createMappingCrmCheck({ channel, controlPlane: { crmCredential: () => undefined } });
    expect((await problemOf(none.check('acc_1', mapping('signups')))).errors).toEqual([expect.objectContaining({ code: 'unknown_credential' })]);
  });

  it('says the mapping was not saved when the CRM cannot be asked, keeping the status and Retry-After, and caches no failure', async () => {
    let fail = true;
    const { channel, asked } = fakeChannel(async (r) => {
      if (fail) throw new ProblemError('rateLimited', 'Too many connection checks for this account.', { headers: { 'retry-after': '30' } });
      return list(r.object);
    });
    const check = createMappingCrmCheck({ channel, controlPlane: { crmCredential: () => credential('t') } });
    const limited = await problemOf(check.check('acc_1', mapping('signups')));
    expect(limited.kind).toBe('rateLimited');
    expect(limited.headers).toEqual({ 'retry-after': '30' });
    expect(limited.detail).toBe('The mapping was not checked against the CRM, so it was not saved: Too many connection checks for this account.');
    fail = false;
    await check.check('acc_1', mapping('signups'));
    expect(asked).toHaveLength(2);
  });

  it('asks nothing for a webhook mapping', async () => {
    const { channel, asked } = fakeChannel();
    const check = createMappingCrmCheck({ channel, controlPlane: { crmCredential: () => undefined } });
    await check.check('acc_1', mapping('anything', 'webhook'));
    expect(asked).toEqual([]);
  });
});
