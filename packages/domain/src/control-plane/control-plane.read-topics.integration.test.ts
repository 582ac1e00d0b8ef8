/**
 * Real servers: Kafka. What the ingest gateway's control plane holds (docs/security.md, "Kafka
 * principals and ACLs"): it reads the control topics of its Kafka role only (accounts and API
 * keys), so owners' emails and password hashes, CRM mappings, credentials and named admins never
 * reach the public API's memory, even where the broker has no ACLs at all.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CrmMapping } from '@ingest/schemas';
import { controlTopicsRead, createMetricsRegistry, createProducer, type Producer } from '@ingest/platform';
import { CONTROL_PLANE_TOPICS, createTestKafka, sampleValue, type TestKafka, testCredentialKeys, testLogger } from '@ingest/testkit';
import { hashAdminToken } from './admins.js';
import { hashApiKey } from './api-keys.js';
import { createControlPlane } from './control-plane.store.js';
import { hashPassword } from './owner-password.js';
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

describe('the ingest gateway control plane (readTopics of the ingest role)', () => {
  it('holds the accounts and API keys, and no owner, mapping, CRM credential or admin', async () => {
    // The console's view writes every kind of record.
    const console = createControlPlane({
      kafka: kafka.kafka,
      producer,
      topicPrefix: kafka.prefix,
      logger: testLogger(),
      instanceId: 'console',
      credentialSealer: testCredentialKeys().sealer,
    });
    instances.push(console);
    await console.start();
    const account = await console.createAccount({ name: 'Read topics', plan: 'growth' });
    const { record: key, plaintext } = await console.createApiKey(account.id, 'ingest');
    const email = 'owner@read-topics.example';
    await console.createOwner(account.id, email, await hashPassword('a long enough password', { N: 2 ** 10, r: 8, p: 1 }));
    const mapping: CrmMapping = {
      version: 1,
      crm: { type: 'hubspot', credentialsRef: 'main' },
      rules: [{ id: 'signup', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'increment', field: 'signups' }] }],
    };
    await console.putCrmCredential(account.id, 'main', { type: 'hubspot', accessToken: 'pat-read-topics' });
    await console.putMapping(account.id, mapping, 'admin');
    const { token: adminToken } = await console.createAdminCredential('read-topics', 'operator');
    // The console itself holds them all (the writes above are read back before they return).
    expect(console.ownerByEmail(email)?.accountId).toBe(account.id);
    expect(console.listAdminCredentials()).toHaveLength(1);

    // As the gateway's main.ts builds it.
    const metrics = createMetricsRegistry('gateway');
    const ingest = createControlPlane({
      kafka: kafka.kafka,
      producer,
      topicPrefix: kafka.prefix,
      logger: testLogger(),
      metrics,
      instanceId: 'ingest',
      readTopics: controlTopicsRead('ingest'),
    });
    instances.push(ingest);
    await ingest.start();

    expect(ingest.accountById(account.id)?.name).toBe('Read topics');
    expect(ingest.apiKeyByHash(hashApiKey(plaintext))?.id).toBe(key.id);
    expect({
      owner: ingest.ownerByEmail(email),
      owners: ingest.listOwners(account.id),
      mapping: ingest.currentMapping(account.id),
      credential: ingest.crmCredential(account.id, 'main'),
      admins: ingest.listAdminCredentials(),
      admin: ingest.adminByTokenHash(hashAdminToken(adminToken)),
    }).toEqual({ owner: undefined, owners: [], mapping: undefined, credential: undefined, admins: [], admin: undefined });
    const text = await metrics.metrics();
    const held = Object.fromEntries(
      ['accounts', 'api_keys', 'owners', 'mappings', 'crm_credentials', 'admin_credentials'].map((kind) => [
        kind,
        sampleValue(text, 'ingest_control_plane_records', { kind }),
      ]),
    );
    expect(held).toEqual({ accounts: 1, api_keys: 1, owners: 0, mappings: 0, crm_credentials: 0, admin_credentials: 0 });
  });
});
