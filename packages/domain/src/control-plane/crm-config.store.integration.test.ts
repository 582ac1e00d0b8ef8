/**
 * Real servers: Kafka (from the local stack or a container; see scripts/test). CRM mapping
 * versions and credentials through the control plane store; several instances share one topic
 * prefix, as gateway replicas and CRM sinks share one cluster.
 */
import type { CrmMapping } from '@ingest/schemas';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AppError } from '@ingest/platform';
import { createProducer, type Producer } from '@ingest/platform';
import { CONTROL_PLANE_TOPICS, createTestKafka, type TestKafka, testCredentialKeys, testLogger, waitFor } from '@ingest/testkit';
import { createControlPlane } from './control-plane.store.js';
import { InvalidConfigError, MappingVersionMismatchError } from './crm-config.ops.js';
import type { ControlPlane } from './types.js';

let kafka: TestKafka;
let producer: Producer;
const instances: ControlPlane[] = [];

beforeAll(async () => {
  kafka = await createTestKafka([...CONTROL_PLANE_TOPICS]);
  producer = createProducer(kafka.kafka);
  await producer.connect();
});

afterAll(async () => {
  await Promise.allSettled(instances.map((i) => i.stop()));
  await producer?.disconnect();
  await kafka?.cleanup();
});

async function startInstance(instanceId: string): Promise<ControlPlane> {
  const cp = createControlPlane({
    kafka: kafka.kafka,
    producer,
    topicPrefix: kafka.prefix,
    logger: testLogger(),
    instanceId,
    credentialSealer: testCredentialKeys().sealer,
  });
  instances.push(cp);
  await cp.start();
  return cp;
}

const mapping = (field: string): CrmMapping => ({
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'main' },
  rules: [{ id: 'seen', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'max', field, from: { event: 'timestamp' } }] }],
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (e: unknown) => e,
  );
}

describe('CRM configuration in the control plane', () => {
  let a: ControlPlane;
  let b: ControlPlane;
  let accountId: string;

  beforeAll(async () => {
    [a, b] = await Promise.all([startInstance('a'), startInstance('b')]);
    accountId = (await a.createAccount({ name: 'Acme', plan: 'pro' })).id;
  });

  it('stores numbered versions with author and time; the writer sees its write at once and another instance soon after', async () => {
    const v1 = await a.putMapping(accountId, mapping('last_seen_at'), 'admin');
    expect(v1).toMatchObject({ accountId, version: 1, author: 'admin', mapping: mapping('last_seen_at') });
    expect(Date.parse(v1.createdAt)).not.toBeNaN();
    expect(a.currentMapping(accountId)).toEqual(v1);

    await waitFor(() => b.currentMapping(accountId)?.version === 1, { description: 'B sees version 1' });
    // B writes the next version after reading to the end: 2, not a second 1.
    const v2 = await b.putMapping(accountId, mapping('last_active_at'), 'owner:ada@example.com');
    expect(v2.version).toBe(2);
    await waitFor(() => a.currentMapping(accountId)?.version === 2, { description: 'A sees version 2' });
    expect(a.mappingVersions(accountId).map((v) => [v.version, v.author])).toEqual([
      [1, 'admin'],
      [2, 'owner:ada@example.com'],
    ]);
  });

  it('refuses a write whose expected version is not current (If-Match)', async () => {
    const current = a.currentMapping(accountId)?.version ?? 0;
    const err = await rejection(a.putMapping(accountId, mapping('x'), 'admin', { expectedVersion: current - 1 }));
    expect(err).toBeInstanceOf(MappingVersionMismatchError);
    expect((err as MappingVersionMismatchError).currentVersion).toBe(current);
    const ok = await a.putMapping(accountId, mapping('x'), 'admin', { expectedVersion: current });
    expect(ok.version).toBe(current + 1);
  });

  it('lets exactly one of two editors that start from the same version win; the other gets a mismatch', async () => {
    const current = a.currentMapping(accountId)?.version ?? 0;
    await waitFor(() => b.currentMapping(accountId)?.version === current, { description: 'B caught up' });
    const results = await Promise.allSettled([
      a.putMapping(accountId, mapping('from_a'), 'a', { expectedVersion: current }),
      b.putMapping(accountId, mapping('from_b'), 'b', { expectedVersion: current }),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r) => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect((lost[0] as PromiseRejectedResult).reason).toBeInstanceOf(MappingVersionMismatchError);
    const winner = (won[0] as PromiseFulfilledResult<{ author: string }>).value.author;
    await waitFor(() => a.currentMapping(accountId)?.version === current + 1 && b.currentMapping(accountId)?.version === current + 1, {
      description: 'both see the winner',
    });
    expect(a.currentMapping(accountId)?.author).toBe(winner);
    expect(b.currentMapping(accountId)?.author).toBe(winner);
  });

  it('refuses an invalid document with every error and a JSON Pointer, and unknown accounts', async () => {
    const bad = {
      version: 1,
      crm: { type: 'pipedrive', credentialsRef: 'main' },
      rules: [{ id: 'Bad Id', when: { eventName: 'x' }, object: 'contact', actions: [] }],
    };
    const err = await rejection(a.putMapping(accountId, bad, 'admin'));
    expect(err).toBeInstanceOf(InvalidConfigError);
    expect((err as InvalidConfigError).code).toBe('mapping_invalid');
    expect((err as InvalidConfigError).errors.map((e) => e.field).sort()).toEqual(['/crm/type', '/rules/0/actions', '/rules/0/id']);
    const missing = await rejection(a.putMapping('acc_nope', mapping('x'), 'admin'));
    expect((missing as AppError).code).toBe('account_not_found');
  });

  it('keeps credentials per (account, name); the last write wins', async () => {
    await a.putCrmCredential(accountId, 'main', { type: 'hubspot', accessToken: 'pat-1' });
    const stored = await a.putCrmCredential(accountId, 'main', { type: 'hubspot', accessToken: 'pat-2', baseUrl: 'http://127.0.0.1:1' });
    // Settings in clear, the secret sealed for crm-sink's key: only its private key opens it.
    expect(stored).toMatchObject({ accountId, name: 'main', credential: { type: 'hubspot', baseUrl: 'http://127.0.0.1:1' } });
    expect(JSON.stringify(stored)).not.toContain('pat-2');
    await a.putCrmCredential(accountId, 'hooks', { type: 'webhook', url: 'https://example.com/hook', secret: 'whsec' });
    const main = a.crmCredential(accountId, 'main');
    expect(main?.credential).toEqual({ type: 'hubspot', baseUrl: 'http://127.0.0.1:1' });
    expect(main && testCredentialKeys().opener(main)).toEqual({ type: 'hubspot', accessToken: 'pat-2', baseUrl: 'http://127.0.0.1:1' });
    expect(a.listCrmCredentials(accountId).map((c) => c.name)).toEqual(['hooks', 'main']);
    await waitFor(() => b.crmCredential(accountId, 'main')?.credential.type === 'hubspot' && b.listCrmCredentials(accountId).length === 2, {
      description: 'B sees the credentials',
    });
    const invalid = await rejection(a.putCrmCredential(accountId, 'bad/name', { type: 'webhook', url: 'ftp://x', secret: '' }));
    expect((invalid as InvalidConfigError).errors.map((e) => e.field).sort()).toEqual(['/name', '/secret', '/url']);
  });

  it('a fresh instance reads every version and credential back from the topics', async () => {
    const fresh = await startInstance('fresh');
    expect(fresh.mappingVersions(accountId)).toEqual(a.mappingVersions(accountId));
    expect(fresh.currentMapping(accountId)).toEqual(a.currentMapping(accountId));
    expect(fresh.crmCredential(accountId, 'main')).toEqual(a.crmCredential(accountId, 'main'));
  });
});
