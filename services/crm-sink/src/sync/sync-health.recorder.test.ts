import type { OutcomeCounts, SyncHealthChange, SyncHealthStore } from '@ingest/domain';
import { testLogger } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import { countingSyncStates, createSyncHealthRecorder } from './sync-health.recorder.js';

function fakeStore(fail = false) {
  const changes: [string, SyncHealthChange][] = [];
  const counts: [string, Partial<OutcomeCounts>][] = [];
  const store: SyncHealthStore = {
    async count(accountId, c) {
      if (fail) throw new Error('redis down');
      counts.push([accountId, c]);
    },
    async change(accountId, change) {
      if (fail) throw new Error('redis down');
      changes.push([accountId, change]);
      return true;
    },
    read: () => Promise.reject(new Error('not used')),
    unhealthy: () => Promise.reject(new Error('not used')),
  };
  return { store, changes, counts };
}

describe('sync health recorder', () => {
  it('turns flush results into states: any success runs, all failed is failing or a broken credential by code', async () => {
    const { store, changes } = fakeStore();
    const health = createSyncHealthRecorder({ store, logger: testLogger(), now: () => 1 });
    await health.flushed('a', { synced: 2, failed: 1, failure: { code: 'crm_permanent', reason: 'x' } });
    await health.flushed('b', { synced: 0, failed: 3, failure: { code: 'crm_record_rejected', reason: 'hubspot answered 400' } });
    await health.flushed('c', { synced: 0, failed: 1, failure: { code: 'crm_auth', reason: 'hubspot answered 401' } });
    await health.flushed('d', { synced: 0, failed: 0 });
    await health.parked('e', { why: 'hanging', message: 'a CRM call did not answer within 10000 ms' });
    await health.parked('f', { why: 'suspended', message: 'ignored' });
    expect(changes).toEqual([
      ['a', { state: 'running', success: true, failure: true }],
      ['b', { state: 'failing', reason: 'events failed: hubspot answered 400', failure: true }],
      ['c', { state: 'credential_broken', reason: 'the CRM credential does not work: hubspot answered 401', failure: true }],
      ['e', { state: 'parked', reason: 'the CRM does not answer: a CRM call did not answer within 10000 ms' }],
      ['f', { state: 'parked', reason: 'the account is suspended' }],
    ]);
  });

  it('counts recorded sync states per account after they are stored, and never fails the caller when Redis does', async () => {
    const { store, counts } = fakeStore();
    const recorded: unknown[] = [];
    const states = countingSyncStates(
      {
        record: async (u) => {
          recorded.push(...u);
        },
        read: async () => ({ state: 'pending' }),
        readMany: async () => [],
      },
      createSyncHealthRecorder({ store, logger: testLogger() }),
    );
    await states.record([
      { accountId: 'a', eventId: '1', state: 'synced' },
      { accountId: 'a', eventId: '2', state: 'failed', reason: 'x' },
      { accountId: 'b', eventId: '3', state: 'skipped', reason: 'no_mapping' },
      { accountId: 'a', eventId: '4', state: 'synced' },
    ]);
    expect(recorded).toHaveLength(4);
    expect(counts).toEqual([
      ['a', { synced: 2, skipped: 0, failed: 1 }],
      ['b', { synced: 0, skipped: 1, failed: 0 }],
    ]);

    const broken = createSyncHealthRecorder({ store: fakeStore(true).store, logger: testLogger() });
    await expect(broken.flushed('a', { synced: 1, failed: 0 })).resolves.toBeUndefined();
    await expect(broken.counted([{ accountId: 'a', eventId: '1', state: 'synced' }])).resolves.toBeUndefined();
    await expect(broken.credentialBroken('a', 'revoked')).resolves.toBeUndefined();
  });
});
