/**
 * Real servers: Kafka and Redis; the fake HubSpot over HTTP with the real adapter. The wiring
 * of main.ts: mappings and credentials written through the control plane (validated, stored in
 * its compacted topics) reach the sink, which syncs exactly what the dry-run planner says.
 */
import type { CrmMapping } from '@ingest/schemas';
import { type ControlPlane, planSync } from '@ingest/domain';
import { uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from './adapters/index.js';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { createSinkFixture, type SinkFixture } from './crm-sink.fixture.js';

const TOKEN = 'tok-control-plane';
let fx: SinkFixture;
let crm: FakeCrm;
let controlPlane: ControlPlane;

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot-main' },
  rules: [
    {
      id: 'trial',
      when: { eventName: 'Trial Started', where: [{ property: 'seats', op: 'gt', value: 0 }] },
      object: 'contact',
      actions: [
        { op: 'set', field: 'lifecycle', from: { constant: 'trial' } },
        { op: 'set', field: 'headline', from: { template: '{{properties.plan}} trial for {{properties.seats}} seats' } },
        { op: 'increment', field: 'trials', by: 1 },
      ],
    },
  ],
};

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: [TOKEN] });
  fx = await createSinkFixture({
    createAdapter: (credential) => createAdapter(credential, { outboundPolicy: FAKE_CRM_OUTBOUND }),
    controlPlane: true,
  });
  controlPlane = fx.controlPlane();
});

afterAll(async () => {
  await fx?.cleanup();
  await crm?.stop();
});

describe('crm-sink with the control plane', () => {
  it('syncs with the mapping and credential stored through the control plane, as the dry-run plans it', async () => {
    const account = await controlPlane.createAccount({ name: 'Wired Inc', plan: 'pro' });
    await controlPlane.putCrmCredential(account.id, 'hubspot-main', { type: 'hubspot', accessToken: TOKEN, baseUrl: crm.url });
    const stored = await controlPlane.putMapping(account.id, mapping, 'cli');
    await fx.startSink(`crm-sink-${uniqueSuffix()}`, { mappings: controlPlane });

    const events = [
      fx.event(account.id, 'Trial Started', 'wes@wired.io', { plan: 'growth', seats: 5 }, 1),
      fx.event(account.id, 'Trial Started', 'wes@wired.io', { plan: 'growth', seats: 0 }, 2),
    ];
    await fx.produce(events);
    await fx.settled(events);

    const planned = events.flatMap((e) => planSync(stored.mapping, e));
    expect(planned).toHaveLength(1);
    const contact = await waitFor(() => crm.records('hubspot', 'contacts').get('wes@wired.io'), { description: 'the contact' });
    expect(contact.properties).toMatchObject({ ...(planned[0]?.set as Record<string, string>), trials: '1' });
    expect((await fx.states(events)).map((s) => [s.state, s.reason])).toEqual([
      ['synced', undefined],
      ['skipped', 'no_rule_matched'],
    ]);
  });
});
