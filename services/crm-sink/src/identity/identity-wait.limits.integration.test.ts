/**
 * Real servers: Kafka and Redis; the in-memory CRM double. The bound on events waiting for their
 * identify (IDENTITY_WAIT_MAX_PER_ACCOUNT): beyond it an account's event is skipped at once
 * (`identity_unresolved`, counted `refused`) instead of growing Redis; the waiting ones are
 * skipped after IDENTITY_WAIT_SECONDS; another account is not limited by it.
 */
import type { EventRecord } from '@ingest/schemas';
import { type CrmCredential } from '@ingest/domain';
import { createMetricsRegistry } from '@ingest/platform';
import { sampleValue, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryCrm, createStaticMappings } from '../adapters/memory-crm.fixture.js';
import { createSinkFixture, everyKindMapping, type SinkFixture } from '../crm-sink.fixture.js';

const crm = createMemoryCrm();
const metrics = createMetricsRegistry('identity-wait-limits');
let fx: SinkFixture;

beforeAll(async () => {
  const credential: CrmCredential = { type: 'hubspot', accessToken: 'tok' };
  const mapping = { mapping: everyKindMapping('main'), credential };
  fx = await createSinkFixture({ mappings: createStaticMappings({ acc_wait_a: mapping, acc_wait_b: mapping }), createAdapter: () => crm.adapter });
  await fx.startSink(`crm-sink-${uniqueSuffix()}`, { metrics, identityWait: { waitMs: 3_000, maxPerAccount: 2, pollMs: 100 } });
});

afterAll(async () => {
  await fx?.cleanup();
});

const anonymous = (accountId: string, userId: string): EventRecord => ({ ...fx.event(accountId, 'Page Viewed', null, { path: '/' }), userId });

describe('events waiting for their identify', () => {
  it('at most IDENTITY_WAIT_MAX_PER_ACCOUNT per account; the rest are skipped at once, the waiting ones after the bound', async () => {
    const first = [anonymous('acc_wait_a', 'u1'), anonymous('acc_wait_a', 'u2')];
    await fx.produce(first);
    // Both wait (pending) while the account is under its bound.
    const waits = (outcome: string) => metrics.metrics().then((text) => sampleValue(text, 'ingest_identity_waits_total', { outcome }));
    await waitFor(async () => ((await waits('waiting')) === 2 ? true : undefined), { description: 'two waiting events' });
    const over = anonymous('acc_wait_a', 'u3');
    const other = anonymous('acc_wait_b', 'u4');
    await fx.produce([over, other]);
    await fx.settled([over]);
    expect(await fx.states([over])).toEqual([expect.objectContaining({ state: 'skipped', reason: 'identity_unresolved' })]);
    expect(await waits('refused')).toBe(1);
    // The other account waits as usual; the first two are skipped once the 3 s bound passed.
    expect((await fx.states([other]))[0]?.state).toBe('pending');
    await fx.settled([...first, other], 20_000);
    expect((await fx.states([...first, other])).map((s) => s.reason)).toEqual(['identity_unresolved', 'identity_unresolved', 'identity_unresolved']);
    expect(await waits('expired')).toBe(3);
  }, 40_000);
});
