/**
 * Real servers: Kafka (from the local stack or a container; see scripts/test). Several control
 * plane instances share one topic prefix, as gateway replicas share one cluster.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AppError } from '@ingest/platform';
import type { KafkaClient } from '@ingest/platform';
import { KafkaError } from '@ingest/platform';
import { createProducer, type Producer } from '@ingest/platform';
import { createMetricsRegistry, type Registry } from '@ingest/platform';
import { CONTROL_PLANE_TOPICS, createTestKafka, sampleValue, type TestKafka, testLogger, waitFor } from '@ingest/testkit';
import { hashApiKey } from './api-keys.js';
import { createControlPlane } from './control-plane.store.js';
import type { Account, ControlPlane } from './types.js';

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

async function startInstance(instanceId: string, options: { startTimeoutMs?: number; topicPrefix?: string; metrics?: Registry } = {}): Promise<ControlPlane> {
  const cp = createControlPlane({ kafka: kafka.kafka, producer, topicPrefix: kafka.prefix, logger: testLogger(), instanceId, ...options });
  instances.push(cp);
  await cp.start();
  return cp;
}

async function expectAppError(promise: Promise<unknown>, code: string): Promise<void> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe(code);
}

describe('control plane store', () => {
  let a: ControlPlane;
  let b: ControlPlane;
  const aMetrics = createMetricsRegistry('gateway');

  beforeAll(async () => {
    [a, b] = await Promise.all([startInstance('a', { metrics: aMetrics }), startInstance('b')]);
  });

  it('starts caught up on empty topics', () => {
    expect(a.caughtUp()).toBe(true);
    expect(a.healthy()).toBe(true);
    expect(a.listAccounts()).toEqual([]);
  });

  it('shows an account and a key created through A in A at once (read-your-writes) and in B soon after', async () => {
    const account = await a.createAccount({ name: '  Acme Inc  ', plan: 'pro' });
    expect(account).toMatchObject({ name: 'Acme Inc', plan: 'pro' });
    expect(account.id).toMatch(/^acc_[0-9A-Za-z]{20}$/);
    expect(a.accountById(account.id)).toEqual(account);

    const { record, plaintext } = await a.createApiKey(account.id, 'server');
    expect(record.id).toMatch(/^key_[0-9A-Za-z]{20}$/);
    expect(record).toMatchObject({ accountId: account.id, name: 'server', prefix: plaintext.slice(0, 15), hash: hashApiKey(plaintext), revokedAt: null });
    expect(JSON.stringify(record)).not.toContain(plaintext);
    expect(a.apiKeyByHash(hashApiKey(plaintext))).toEqual(record);

    await waitFor(() => b.accountById(account.id), { description: 'account in B' });
    expect(b.accountById(account.id)).toEqual(account);
    const inB = await waitFor(() => b.apiKeyByHash(record.hash), { description: 'key in B' });
    expect(inB).toEqual(record);
    expect(b.listApiKeys(account.id)).toEqual([record]);

    // A's metrics show what it holds and how fresh its newest record is (Kafka time).
    const text = await aMetrics.metrics();
    expect(sampleValue(text, 'ingest_control_plane_records', { kind: 'accounts' })).toBeGreaterThanOrEqual(1);
    expect(sampleValue(text, 'ingest_control_plane_records', { kind: 'api_keys' })).toBe(a.listApiKeys(account.id).length);
    expect(sampleValue(text, 'ingest_control_plane_last_applied_timestamp_seconds')).toBeGreaterThan(Date.now() / 1000 - 120);
  });

  it('lets B write right after a record was written elsewhere (B reads to the end before validating)', async () => {
    // Written straight to the topic (as another replica would) and used at once, before B's
    // consumer can have fetched it: only the catch-up before the write makes these succeed.
    const at = '2026-01-01T00:00:00.000Z';
    const account: Account = { id: 'acc_elsewhere', name: 'Elsewhere', plan: 'free', createdAt: at, updatedAt: at };
    await producer.send(kafka.topic('controlAccounts'), [{ key: account.id, value: JSON.stringify(account) }]);
    const updated = await b.setPlan(account.id, 'growth');
    expect(updated).toMatchObject({ id: account.id, plan: 'growth', createdAt: at });

    const key = {
      id: 'key_elsewhere',
      accountId: account.id,
      name: 'k',
      prefix: 'svc_live_abcdef',
      hash: hashApiKey('elsewhere'),
      createdAt: at,
      revokedAt: null,
    };
    await producer.send(kafka.topic('controlApiKeys'), [{ key: key.id, value: JSON.stringify(key) }]);
    const revoked = await b.revokeApiKey(account.id, key.id);
    expect(revoked.revokedAt).not.toBeNull();
    await waitFor(() => a.accountById(account.id)?.plan === 'growth', { description: 'plan change in A' });
  });

  it('makes a revocation through A visible in B within 5 s, and revoking again changes nothing', async () => {
    const account = await a.createAccount({ name: 'Revokes', plan: 'free' });
    const { record } = await a.createApiKey(account.id, 'old');
    await waitFor(() => b.apiKeyByHash(record.hash), { description: 'key in B' });

    const revoked = await a.revokeApiKey(account.id, record.id);
    expect(revoked.revokedAt).not.toBeNull();
    const seen = await waitFor(() => b.apiKeyByHash(record.hash)?.revokedAt ?? undefined, { timeoutMs: 5_000, intervalMs: 50, description: 'revocation in B' });
    expect(seen).toBe(revoked.revokedAt);

    const again = await b.revokeApiKey(account.id, record.id);
    expect(again).toEqual(revoked);
  });

  it('refuses writes on unknown accounts and keys with the right codes', async () => {
    const account = await a.createAccount({ name: 'Owner', plan: 'free' });
    const other = await a.createAccount({ name: 'Other', plan: 'free' });
    const { record } = await a.createApiKey(other.id, 'theirs');

    await expectAppError(a.setPlan('acc_doesnotexist', 'pro'), 'account_not_found');
    await expectAppError(a.createApiKey('acc_doesnotexist', 'x'), 'account_not_found');
    await expectAppError(a.revokeApiKey(account.id, 'key_doesnotexist'), 'api_key_not_found');
    await expectAppError(a.revokeApiKey(account.id, record.id), 'api_key_not_found');
    await expectAppError(a.setPlan(account.id, 'enterprise' as never), 'invalid_plan');
    await expectAppError(a.createAccount({ name: '   ', plan: 'free' }), 'invalid_name');
    await expectAppError(a.createAccount({ name: 'x'.repeat(201), plan: 'free' }), 'invalid_name');
    expect(a.apiKeyByHash(record.hash)?.revokedAt).toBeNull();
  });

  it('skips garbage records without crashing, and applies tombstones', async () => {
    const topic = kafka.topic('controlAccounts');
    // (A keyless record never gets here: the broker refuses those on compacted topics.)
    const valid: Account = { id: 'acc_direct', name: 'Direct', plan: 'free', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' };
    await producer.send(topic, [
      { key: 'acc_garbage1', value: 'this is {not json' },
      { key: 'acc_garbage2', value: JSON.stringify({ id: 'acc_garbage2', plan: 'platinum' }) },
      { key: 'acc_other', value: JSON.stringify(valid) },
      { key: valid.id, value: JSON.stringify(valid) },
    ]);
    await waitFor(() => a.accountById(valid.id), { description: 'valid record after the garbage' });
    await waitFor(() => b.accountById(valid.id), { description: 'valid record after the garbage in B' });
    expect(a.healthy() && b.healthy()).toBe(true);
    for (const id of ['acc_garbage1', 'acc_garbage2', 'acc_other']) expect(a.accountById(id)).toBeUndefined();

    // The services never write tombstones; an operator's tool would, straight through a driver.
    const raw = kafka.kafka.producer({ ackTimeoutMs: 5_000, compression: 'none' });
    await raw.connect();
    try {
      await raw.send([{ topic, messages: [{ key: valid.id, value: null }] }]);
    } finally {
      await raw.disconnect();
    }
    await waitFor(() => b.accountById(valid.id) === undefined, { description: 'tombstone applied in B' });
    // A write through A reads the topic to its end first, tombstone included.
    await expectAppError(a.setPlan(valid.id, 'pro'), 'account_not_found');
    expect(a.accountById(valid.id)).toBeUndefined();
  });

  it('catches a third instance up with everything before start() resolves', async () => {
    const account = await a.createAccount({ name: 'Before C', plan: 'pro' });
    const { record } = await a.createApiKey(account.id, 'k');
    await a.revokeApiKey(account.id, record.id);

    const c = await startInstance('c');
    expect(c.caughtUp()).toBe(true);
    // No waiting: start() resolved only after reading both topics to their end.
    expect(c.listAccounts()).toEqual(a.listAccounts());
    for (const acc of a.listAccounts()) expect(c.listApiKeys(acc.id)).toEqual(a.listApiKeys(acc.id));
    expect(c.apiKeyByHash(record.hash)?.revokedAt).not.toBeNull();
    expect(c.accountById('acc_direct')).toBeUndefined();
    expect(c.listAccounts().length).toBeGreaterThanOrEqual(5);
  });

  it('fails start() with a clear AppError when the state topics cannot be read', async () => {
    const cp = createControlPlane({ kafka: kafka.kafka, producer, topicPrefix: `${kafka.prefix}missing.`, logger: testLogger(), startTimeoutMs: 5_000 });
    instances.push(cp);
    const err = await cp.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('control_plane_start_failed');
    expect(cp.caughtUp()).toBe(false);
    expect(cp.healthy()).toBe(false);
    await expectAppError(cp.createAccount({ name: 'x', plan: 'free' }), 'control_plane_not_started');
  });

  it('fails start() with control_plane_catch_up_timeout when catching up takes longer than allowed', async () => {
    const cp = createControlPlane({ kafka: kafka.kafka, producer, topicPrefix: kafka.prefix, logger: testLogger(), startTimeoutMs: 1 });
    instances.push(cp);
    await expectAppError(cp.start(), 'control_plane_catch_up_timeout');
    expect(cp.caughtUp()).toBe(false);
  });

  it('goes stale (not ready), then dead (liveness), when it can no longer confirm it is caught up, and fresh again after', async () => {
    // The same Kafka, except that reading end offsets fails while `broken`: what a reader that
    // cannot see the topics any more looks like from inside.
    let broken = false;
    const flaky: KafkaClient = {
      ...kafka.kafka,
      admin() {
        const admin = kafka.kafka.admin();
        return {
          ...admin,
          topicOffsets: (topic) =>
            broken ? Promise.reject(new KafkaError('kafka_error', 'end offsets unreadable', { retryable: false })) : admin.topicOffsets(topic),
        };
      },
    };
    const cp = createControlPlane({
      kafka: flaky,
      producer,
      topicPrefix: kafka.prefix,
      logger: testLogger(),
      instanceId: 'stale',
      staleAfterMs: 1_500,
      deadAfterMs: 3_000,
    });
    instances.push(cp);
    await cp.start();
    expect([cp.fresh(), cp.alive?.()]).toEqual([true, true]);
    // Quiet topics stay fresh: freshness is confirmation, not traffic.
    const quietUntil = Date.now() + 2_500;
    await waitFor(() => Date.now() > quietUntil, { description: 'a quiet while', timeoutMs: 4_000, intervalMs: 100 });
    expect([cp.fresh(), cp.alive?.()]).toEqual([true, true]);

    broken = true;
    const brokenAt = Date.now();
    await waitFor(() => !cp.fresh(), { description: 'stale after 1.5 s unconfirmed', timeoutMs: 5_000, intervalMs: 50 });
    expect(cp.alive?.()).toBe(true);
    await waitFor(() => cp.alive?.() === false, { description: 'dead after 3 s unconfirmed', timeoutMs: 5_000, intervalMs: 50 });
    // The last confirmation came at most one check interval (0.5 s) before the break.
    expect(Date.now() - brokenAt).toBeGreaterThanOrEqual(2_400);

    broken = false;
    await waitFor(() => cp.fresh() && cp.alive?.(), { description: 'fresh and alive again', timeoutMs: 10_000, intervalMs: 50 });
    await cp.stop();
  });
});
