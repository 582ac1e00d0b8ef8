/**
 * Real servers: Kafka and Redis; the fake HubSpot over HTTP with the real adapter, and a second
 * fake host standing for one an attacker runs (both allowed by the outbound policy, so only the
 * sealed credential's AAD stands between the token and it). Whoever can write
 * control.crm-credentials keeps a sealed token and points its baseUrl elsewhere: crm-sink refuses
 * the record (crm_credential_unreadable, dead-lettered with its reason) and sends nothing anywhere.
 */
import type { CrmMapping } from '@ingest/schemas';
import { readDeadLetters } from '@ingest/platform';
import type { ControlPlane } from '@ingest/domain';
import { testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from './adapters/index.js';
import { createSinkFixture, type SinkFixture } from './crm-sink.fixture.js';

const TOKEN = 'tok-aad-bound';
let fx: SinkFixture;
let crm: FakeCrm;
let attacker: FakeCrm;
let controlPlane: ControlPlane;

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hub' },
  rules: [{ id: 'seen', when: { eventName: 'Seen' }, object: 'contact', actions: [{ op: 'increment', field: 'visits', by: 1 }] }],
};

beforeAll(async () => {
  [crm, attacker] = await Promise.all([startFakeCrm({ tokens: [TOKEN] }), startFakeCrm({ tokens: [TOKEN] })]);
  fx = await createSinkFixture({
    createAdapter: (credential) => createAdapter(credential, { outboundPolicy: FAKE_CRM_OUTBOUND }),
    controlPlane: true,
  });
  controlPlane = fx.controlPlane();
});

afterAll(async () => {
  await fx?.cleanup();
  await Promise.allSettled([crm?.stop(), attacker?.stop()]);
});

describe('a sealed CRM credential is bound to its URLs (AAD v2)', () => {
  it('a sealed HubSpot credential copied with another baseUrl is dead-lettered crm_credential_unreadable and no request is made', async () => {
    const accountId = (await controlPlane.createAccount({ name: 'Bound', plan: 'pro' })).id;
    const stored = await controlPlane.putCrmCredential(accountId, 'hub', { type: 'hubspot', accessToken: TOKEN, baseUrl: crm.url });
    expect(stored.sealed?.aad).toBe(2);
    await controlPlane.putMapping(accountId, mapping, 'cli');
    await fx.startSink(`crm-sink-${uniqueSuffix()}`, { mappings: controlPlane });

    // The credential works where it was sealed for.
    const first = [fx.event(accountId, 'Seen', 'ann@bound.io', {}, 1)];
    await fx.produce(first);
    await fx.settled(first);
    expect((await fx.states(first)).map((s) => s.state)).toEqual(['synced']);
    const callsBefore = crm.calls.length;
    expect(callsBefore).toBeGreaterThan(0);

    // The same record (same sealed secret, same updatedAt) with the baseUrl pointing elsewhere.
    const copied = { ...stored, credential: { ...stored.credential, baseUrl: attacker.url } };
    await fx.producer.send(fx.kafka.topic('controlCrmCredentials'), [{ key: `${accountId}/hub`, value: JSON.stringify(copied) }]);
    await waitFor(() => (controlPlane.crmCredential(accountId, 'hub')?.credential as { baseUrl?: string } | undefined)?.baseUrl === attacker.url, {
      description: `the copied record in the control plane (now ${JSON.stringify(controlPlane.crmCredential(accountId, 'hub')?.credential)})`,
    });

    const second = [fx.event(accountId, 'Seen', 'ann@bound.io', {}, 2)];
    await fx.produce(second);
    await fx.settled(second);
    expect(await fx.states(second)).toEqual([
      expect.objectContaining({ state: 'failed', reason: expect.stringMatching(/does not authenticate for this record/) }),
    ]);
    const letters = await waitFor(
      async () => {
        const found = await readDeadLetters(fx.kafka.kafka, fx.kafka.topic('crmDeadLetters'), {
          limit: 10,
          logger: testLogger(),
          filter: (e) => e.code === 'crm_credential_unreadable',
        });
        return found.length > 0 ? found : undefined;
      },
      { description: 'the crm_credential_unreadable dead letter' },
    );
    expect(letters.map((l) => l.reason)).toEqual([expect.stringContaining(`event ${second[0]?.eventId}: CRM credential cannot be decrypted`)]);
    // No request anywhere: neither to the attacker's host nor to the CRM.
    expect(attacker.calls).toEqual([]);
    expect(crm.calls.length).toBe(callsBefore);
    expect(crm.records('hubspot', 'contacts').get('ann@bound.io')?.properties.visits).toBe('1');
  });
});
