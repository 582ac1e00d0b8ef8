/**
 * The shared stores' real code paths under the Redis user of each role that uses them
 * (redis-acl.ts), on a redis-server of the test's own with those users: a grant that misses a
 * command the code (or its scripts) sends fails here, not in production. And a role that only
 * reads a family cannot write it.
 */
import { type Producer, type Redis, type RedisRole, tryLease } from '@ingest/platform';
import { type RedisWithRoles, startRedisWithRoles } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAllowance } from './allowance/allowance.js';
import { allowancePeriod } from './allowance/allowance.period.js';
import { createAllowanceReconciler } from './allowance/allowance.reconciler.js';
import { seenKeys } from './allowance/allowance.keys.js';
import type { Account } from './control-plane/types.js';
import { createRecordStateReader, recordStateKeys } from './crm/record-state.reader.js';
import { pendingLinkMember } from './crm/crm-links.js';
import { createCrmStateEraser } from './erasure/crm-state.eraser.js';
import { createSyncHealthStore } from './crm/sync-health.store.js';
import { createSyncStateStore } from './crm/sync-state.store.js';
import { createJobStatusStore, queuedJobStatus } from './jobs/job-status.store.js';
import { createIdentityMapIndex } from './identity/identity-map.store.js';

const PREFIX = 'roles:';
const AT = Date.UTC(2026, 10, 12, 10, 7);
const KEY = Buffer.from('redis-roles-test-seen-ids-key-0123456789');
const account: Account = { id: 'acc_roles', name: 'r', plan: 'growth', createdAt: '', updatedAt: '' };
let own: RedisWithRoles;
const as: Partial<Record<RedisRole, Redis>> = {};

beforeAll(async () => {
  own = await startRedisWithRoles({ keyPrefix: PREFIX });
  for (const role of ['gateway', 'console', 'processor', 'crm-sink'] as const) as[role] = await own.connectAs(role);
});

afterAll(async () => {
  await own?.close();
});

const role = (r: RedisRole): Redis => as[r] as Redis;

describe('stores under their roles’ Redis users', () => {
  it('the allowance: the gateway and the console reserve and release, the processor settles, reconciles and sweeps', async () => {
    for (const r of ['gateway', 'console'] as const) {
      const allowance = createAllowance({ redis: role(r), keyPrefix: PREFIX, now: () => AT, seenIdsKey: KEY });
      const first = await allowance.reserveEvents(account, [`${r}-1`, `${r}-2`, ''], AT);
      expect(first.decisions).toEqual(['counted', 'counted', 'counted']);
      expect((await allowance.reserveEvents(account, [`${r}-1`], AT)).decisions).toEqual(['repeat']);
      await allowance.releaseEvents(account, [''], AT);
      expect((await allowance.reserveJob(account, `job-${r}`, 10, AT)).granted).toBe(true);
      await allowance.state(account);
    }
    const processor = createAllowance({ redis: role('processor'), keyPrefix: PREFIX, now: () => AT, seenIdsKey: KEY });
    await processor.settleJob({ accountId: account.id, jobId: 'job-gateway', receivedAtMs: AT, accepted: 4 });
    const { id: periodId } = allowancePeriod(AT);
    const reconciler = createAllowanceReconciler(role('processor'), PREFIX);
    expect(await reconciler.accountsWithCounters(periodId)).toEqual([account.id]);
    expect(await reconciler.pendingJobs(account.id, periodId)).toEqual(['job-console']);
    expect(await reconciler.refused(account.id, periodId)).toBe(0);
    await reconciler.reconcile(account.id, periodId, 8, 0);
    // A shard-0 set an earlier release's sweep left behind (in no registry): the processor unlinks it itself.
    const stray = `${seenKeys(account.id, PREFIX).shardPrefix}1:`;
    await role('gateway').sadd(stray, '1');
    expect(await reconciler.sweepSeen(AT + 400 * 24 * 3_600_000)).toBeGreaterThan(0);
    expect(await role('gateway').sismember(stray, '1')).toBe(0);
  });

  it('job statuses: the gateway and the console write the queued one and list, the processor writes progress; the billing lease is the processor’s', async () => {
    // Kafka is not what this test is about: the progress topic's record is dropped.
    const producer = { send: async () => undefined } as unknown as Producer;
    for (const r of ['gateway', 'console', 'processor'] as const) {
      const jobs = createJobStatusStore({ redis: role(r), producer, progressTopic: 'jobs.progress', keyPrefix: PREFIX });
      const status = queuedJobStatus({ jobId: `job_${r}`, accountId: account.id, source: 'csv', totalEvents: 3, atMs: AT });
      await jobs.put(status);
      expect(await jobs.get(`job_${r}`)).toEqual(status);
      expect((await jobs.listForAccount(account.id, 10)).map((j) => j.jobId)).toContain(`job_${r}`);
    }
    const release = await tryLease(role('processor'), `${PREFIX}billing:close:202611`, 10_000);
    expect(release).toBeDefined();
    await release?.();
    await expect(tryLease(role('gateway'), `${PREFIX}billing:close:202611`, 10_000)).rejects.toThrow(/NOPERM/);
  });

  it('the identity map index: the processor writes and marks it built, the console erases, crm-sink only looks up, the gateway not at all', async () => {
    const entry = { v: 1 as const, email: 'ada@roles.io', updatedAt: AT };
    const processor = createIdentityMapIndex({ redis: role('processor'), keyPrefix: PREFIX });
    await processor.put(account.id, [['u:ada', entry]]);
    await processor.markBuilt();
    expect(await processor.isBuilt()).toBe(true);
    const sink = createIdentityMapIndex({ redis: role('crm-sink'), keyPrefix: PREFIX });
    expect((await sink.get(account.id, ['u:ada'])).get('u:ada')).toEqual(entry);
    expect(await sink.isBuilt()).toBe(true);
    await expect(sink.put(account.id, [['u:bob', entry]])).rejects.toThrow(/NOPERM/);
    await expect(createIdentityMapIndex({ redis: role('gateway'), keyPrefix: PREFIX }).get(account.id, ['u:ada'])).rejects.toThrow(/NOPERM/);
    const console = createIdentityMapIndex({ redis: role('console'), keyPrefix: PREFIX });
    const found: string[] = [];
    await console.scan(account.id, (ref) => found.push(ref));
    expect(found).toEqual(['u:ada']);
    expect(await console.remove(account.id, ['u:ada'])).toBe(1);
  });

  it('the CRM sync state and health: crm-sink writes, the gateway and the console read, and neither can write them', async () => {
    await createSyncStateStore({ redis: role('crm-sink'), keyPrefix: PREFIX }).record([{ accountId: account.id, eventId: 'e1', state: 'synced' }]);
    for (const r of ['gateway', 'console'] as const) {
      const reader = createSyncStateStore({ redis: role(r), keyPrefix: PREFIX });
      expect((await reader.read(account.id, 'e1')).state).toBe('synced');
      expect((await reader.readMany(account.id, ['e1', 'e2'])).map((s) => s.state)).toEqual(['synced', 'pending']);
      await expect(reader.record([{ accountId: account.id, eventId: 'e1', state: 'failed' }])).rejects.toThrow(/NOPERM/);
    }

    const sink = createSyncHealthStore({ redis: role('crm-sink'), keyPrefix: PREFIX });
    await sink.count(account.id, { synced: 3, failed: 1 }, AT);
    expect(await sink.change(account.id, { state: 'credential_broken', reason: 'expired', failure: true }, AT)).toBe(true);
    expect((await sink.unhealthy(AT + 1, { limit: 10, stuckAfterMs: 0 })).total).toBe(1);
    const consoleView = createSyncHealthStore({ redis: role('console'), keyPrefix: PREFIX });
    const view = await consoleView.read(account.id, AT + 1);
    expect(view.current?.state).toBe('credential_broken');
    expect(view.hours.at(-1)).toMatchObject({ synced: 3, failed: 1 });
    await expect(consoleView.count(account.id, { synced: 1 }, AT)).rejects.toThrow(/NOPERM/);
    await expect(consoleView.change(account.id, { state: 'running' }, AT)).rejects.toThrow(/can't|NOPERM/);
    await expect(createSyncHealthStore({ redis: role('gateway'), keyPrefix: PREFIX }).read(account.id, AT)).rejects.toThrow(/NOPERM/);

    // The console's dry run reads the record state and the ledgers.
    const records = createRecordStateReader({ redis: role('console'), keyPrefix: PREFIX });
    expect(await records.present(account.id, 'contact', 'a@example.com', ['email'])).toEqual(new Set());
    expect(await records.applied([`crm:${account.id}:e1:r1`])).toEqual(new Set());
  });

  it("an erasure: the console deletes the erased contact's and company's record state and pending links, and nothing else of crm-sink's", async () => {
    const keys = recordStateKeys(PREFIX);
    const sink = role('crm-sink');
    await sink.hset(keys.state(account.id, 'contact', 'gone@example.com'), 'email', 'gone@example.com');
    await sink.hset(keys.state(account.id, 'company', 'gone.example'), 'name', 'Gone');
    await sink.sadd(keys.pendingLinks(account.id, 'acme.example'), pendingLinkMember('gone@example.com'), pendingLinkMember('kept@example.com'));
    await sink.sadd(keys.pendingLinks(account.id, 'gone.example'), pendingLinkMember('kept@example.com'));
    const eraser = createCrmStateEraser({ redis: role('console'), keyPrefix: PREFIX });
    expect(await eraser.erase(account.id, 'email', 'gone@example.com')).toEqual({ crmRecords: 1, pendingLinks: 1 });
    expect(await eraser.erase(account.id, 'domain', 'gone.example')).toEqual({ crmRecords: 1, pendingLinks: 1 });
    expect(await sink.smembers(keys.pendingLinks(account.id, 'acme.example'))).toEqual([pendingLinkMember('kept@example.com')]);
    // The grant is for these families only: the park stays the sink's.
    await expect(role('console').del(`${PREFIX}crm:park:${account.id}`)).rejects.toThrow(/NOPERM/);
  });
});
