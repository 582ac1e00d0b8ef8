/**
 * Real servers: Kafka and Redis; the CRM is the fake HubSpot of the test kit over real HTTP,
 * called by the real HubSpot adapter. Each account meets its CRM in another condition, and its
 * sync health (the store the console reads) and the sink's health metrics say so.
 */
import type { CrmMapping, EventRecord } from '@ingest/schemas';
import { createMetricsRegistry, type Registry } from '@ingest/platform';
import { createSyncHealthStore, type SyncHealthStore } from '@ingest/domain';
import { metricSum, sampleValue, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from '../adapters/index.js';
import { createStaticMappings } from '../adapters/memory-crm.fixture.js';
import { createSinkFixture, type SinkFixture } from '../crm-sink.fixture.js';
import { createSyncHealthRecorder } from './sync-health.recorder.js';

const ACCOUNTS = ['acc_ok', 'acc_rejects', 'acc_auth', 'acc_limited'] as const;
const token = (accountId: string) => `tok-${accountId}-${uniqueSuffix()}`;
const tokens = Object.fromEntries(ACCOUNTS.map((a) => [a, token(a)])) as Record<(typeof ACCOUNTS)[number], string>;

let fx: SinkFixture;
let crm: FakeCrm;
let health: SyncHealthStore;
const metrics: Registry = createMetricsRegistry('crm-sink-health-test');

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot-main' },
  rules: [{ id: 'page', when: { eventName: 'Page Viewed' }, object: 'contact', actions: [{ op: 'increment', field: 'page_views' }] }],
};

beforeAll(async () => {
  // acc_auth's token is not one the fake accepts: every call is a 401, as for a revoked token.
  crm = await startFakeCrm({ tokens: [tokens.acc_ok, tokens.acc_rejects, tokens.acc_limited] });
  fx = await createSinkFixture({
    mappings: createStaticMappings(
      Object.fromEntries(ACCOUNTS.map((a) => [a, { mapping, credential: { type: 'hubspot' as const, accessToken: tokens[a], baseUrl: crm.url } }])),
    ),
    createAdapter: (credential) => createAdapter(credential, { outboundPolicy: FAKE_CRM_OUTBOUND }),
  });
  health = createSyncHealthStore({ redis: fx.redis, keyPrefix: fx.redisKeyPrefix });
  crm.failNext({ status: 400, times: 1000, token: tokens.acc_rejects });
  // A Retry-After beyond the hold (5 s in TEST_PARK): the account is parked at once, tried again after 6 s.
  crm.failNext({ status: 429, retryAfterSeconds: 6, times: 1000, token: tokens.acc_limited });
  await fx.startSink(`crm-sink-health-${uniqueSuffix()}`, { metrics, health: { alertAfterMs: 1, maxAccounts: 2, pollMs: 200 } });
});

afterAll(async () => {
  await fx?.cleanup();
  await crm?.stop();
});

const events = (accountId: string, n: number, eventName = 'Page Viewed'): EventRecord[] =>
  Array.from({ length: n }, (_, i) => fx.event(accountId, eventName, `u${i}@health.io`, {}, i));

async function stateOf(accountId: string, expected: string) {
  return waitFor(
    async () => {
      const view = await health.read(accountId, Date.now());
      if (view.current?.state !== expected) throw new Error(`state of ${accountId}: ${JSON.stringify(view.current)}`);
      return view;
    },
    { description: `${accountId} ${expected}`, timeoutMs: 60_000 },
  );
}

const totals = (view: Awaited<ReturnType<SyncHealthStore['read']>>) =>
  view.hours.reduce((t, h) => ({ synced: t.synced + h.synced, skipped: t.skipped + h.skipped, failed: t.failed + h.failed }), {
    synced: 0,
    skipped: 0,
    failed: 0,
  });

describe('sync health recorded by the crm-sink', () => {
  it('says running with the counts and last success, failing with the CRM reason, credential broken on 401, parked on a long Retry-After', async () => {
    const ok = [...events('acc_ok', 5), ...events('acc_ok', 2, 'Unmapped Event')];
    const rejects = events('acc_rejects', 3);
    const auth = events('acc_auth', 2);
    const limited = events('acc_limited', 2);
    await fx.produce([...ok, ...rejects, ...auth, ...limited]);

    const running = await stateOf('acc_ok', 'running');
    await fx.settled(ok);
    await waitFor(async () => totals(await health.read('acc_ok', Date.now())).synced === 5, { description: 'acc_ok counted', timeoutMs: 10_000 });
    expect(totals(await health.read('acc_ok', Date.now()))).toEqual({ synced: 5, skipped: 2, failed: 0 });
    expect(running.current?.lastSuccessAtMs).toBeGreaterThan(Date.now() - 60_000);
    expect(running.current?.reason).toBeUndefined();

    const failing = await stateOf('acc_rejects', 'failing');
    expect(failing.current?.reason).toMatch(/^events failed: .*400/);
    await fx.settled(rejects);
    expect(totals(await health.read('acc_rejects', Date.now()))).toMatchObject({ synced: 0, failed: 3 });

    const broken = await stateOf('acc_auth', 'credential_broken');
    expect(broken.current?.reason).toMatch(/^the CRM credential does not work: .*401/);
    expect(broken.current?.reason).not.toContain(tokens.acc_auth);

    const parked = await stateOf('acc_limited', 'parked');
    expect(parked.current?.reason).toMatch(/^the CRM is rate limiting this account/);
    expect(totals(parked)).toEqual({ synced: 0, skipped: 0, failed: 0 });
  });

  it('exports the unhealthy and stuck accounts, and at most CRM_HEALTH_METRICS_MAX_ACCOUNTS of them by name', async () => {
    const seen = await waitFor(
      async () => {
        const text = await metrics.metrics();
        if (sampleValue(text, 'ingest_crm_sync_stuck_accounts') !== 3)
          throw new Error(
            text
              .split('\n')
              .filter((l) => l.includes('crm_sync_'))
              .join('\n'),
          );
        return text;
      },
      { description: 'three stuck accounts in the metrics', timeoutMs: 10_000 },
    );
    expect(sampleValue(seen, 'ingest_crm_sync_unhealthy_accounts')).toBe(3);
    const listed = seen.split('\n').filter((l) => l.startsWith('ingest_crm_sync_unhealthy_seconds{'));
    expect(listed).toHaveLength(2);
    expect(listed.join('\n')).not.toContain('acc_ok');
    expect(metricSum(seen, 'ingest_crm_sync_unhealthy_seconds')).toBeGreaterThan(0);
  });

  it("says running again once the parked account's CRM takes writes, with its parked events counted as synced", async () => {
    crm.clearFaults();
    const back = await stateOf('acc_limited', 'running');
    expect(back.current?.lastSuccessAtMs).toBeGreaterThan(0);
    expect(back.current?.unhealthySinceMs).toBeUndefined();
    expect(totals(back)).toEqual({ synced: 2, skipped: 0, failed: 0 });
  });

  it('lets whoever finds the credential broken say so, and repaired', async () => {
    const recorder = createSyncHealthRecorder({ store: health, logger: testLogger() });
    await recorder.credentialBroken('acc_ok', 'the refresh token was revoked');
    expect((await health.read('acc_ok', Date.now())).current).toMatchObject({ state: 'credential_broken', reason: 'the refresh token was revoked' });
    await recorder.credentialRepaired('acc_ok');
    expect((await health.read('acc_ok', Date.now())).current?.state).toBe('running');
    // Repairing a credential does not hide another problem.
    await recorder.credentialRepaired('acc_rejects');
    expect((await health.read('acc_rejects', Date.now())).current?.state).toBe('failing');
    // Nor does an empty park.
    await recorder.unparked('acc_rejects');
    expect((await health.read('acc_rejects', Date.now())).current?.state).toBe('failing');
  });
});
