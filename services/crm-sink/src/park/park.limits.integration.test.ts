/**
 * Real servers: Kafka and Redis; the in-memory CRM double, rate limited for good. The bounds of
 * parking: an account's events beyond its park cap are dead-lettered at once (crm_park_full),
 * and parked events older than CRM_PARK_MAX_AGE_MS are dead-lettered (crm_retries_exhausted);
 * both can be replayed later, and the partition's offsets move on either way.
 */
import { type CrmCredential } from '@ingest/domain';
import { readDeadLetters } from '@ingest/platform';
import { testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryCrm, createStaticMappings } from '../adapters/memory-crm.fixture.js';
import { createSinkFixture, everyKindMapping, type SinkFixture, TEST_PARK } from '../crm-sink.fixture.js';

const crm = createMemoryCrm();
let fx: SinkFixture;

beforeAll(async () => {
  const credential: CrmCredential = { type: 'hubspot', accessToken: 'tok' };
  fx = await createSinkFixture({
    mappings: createStaticMappings({ acc_full: { mapping: everyKindMapping('main'), credential } }),
    createAdapter: () => crm.adapter,
  });
  await fx.startSink(`crm-sink-${uniqueSuffix()}`, {
    coalesce: { windowMs: 50, maxRecords: 50 },
    park: {
      ...TEST_PARK,
      hold: { holdMs: 300, maxRetryAfterMs: 500 },
      limits: { ...TEST_PARK.limits, maxEventsPerAccount: 3 },
      maxAgeMs: 2_000,
    },
  });
});

afterAll(async () => {
  await fx?.cleanup();
});

describe('parking limits', () => {
  it('dead-letters what is over the account’s cap at once and the rest once it is too old', async () => {
    crm.failNext('rate_limited', 100_000, { retryAfterMs: 60_000 });
    const events = Array.from({ length: 5 }, (_, i) => fx.event('acc_full', 'Page Viewed', 'pat@full.io', { path: `/${i}` }, i));
    await fx.produce(events);
    await fx.settled(events, 30_000);
    const states = await fx.states(events);
    expect(states.map((s) => s.state)).toEqual(['failed', 'failed', 'failed', 'failed', 'failed']);
    const letters = await waitFor(
      async () => {
        const found = await readDeadLetters(fx.kafka.kafka, fx.kafka.topic('crmDeadLetters'), { limit: 10, logger: testLogger() });
        return found.length === 5 ? found : undefined;
      },
      { description: 'five dead letters' },
    );
    expect(letters.map((l) => l.code).sort()).toEqual([
      'crm_park_full',
      'crm_park_full',
      'crm_retries_exhausted',
      'crm_retries_exhausted',
      'crm_retries_exhausted',
    ]);
    expect(letters.find((l) => l.code === 'crm_retries_exhausted')?.reason).toMatch(/CRM_PARK_MAX_AGE_MS/);
    // Never written: the CRM only ever answered 429.
    expect(crm.record('contact', 'pat@full.io')).toBeUndefined();
  });
});
