import type { DeadLetterEntry } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { operatorName, replayAuditEntries, type ReplayAuditContext } from './replay-audit.js';

function entry(offset: number, key: string | null, value: string, code = 'crm_permanent'): DeadLetterEntry {
  return {
    partition: 0,
    offset: String(offset),
    code,
    reason: 'refused',
    sourceTopic: 'p.events.unique',
    sourcePartition: 1,
    sourceOffset: String(100 + offset),
    failedAt: '2026-11-25T20:00:00.000Z',
    consumer: 'crm-sink',
    key: key === null ? null : Buffer.from(key),
    value: Buffer.from(value),
    valueBytes: value.length,
    headers: {},
    replayedFrom: null,
  };
}

const ctx = (selection: ReplayAuditContext['selection']): ReplayAuditContext => ({
  operator: 'ops-grace',
  host: 'bastion-1',
  requestId: 'req-1',
  at: new Date('2026-11-25T21:00:00.000Z'),
  topicPrefix: 'p.',
  deadLetterTopic: 'p.crm.deadletter',
  targetOf: () => 'p.crm.replay',
  selection,
});

describe('replayAuditEntries', () => {
  const secretValue = (accountId: string, eventId: string) => JSON.stringify({ accountId, eventId, email: 'who@private.io', properties: { note: 'private' } });

  it('writes one record per account, by ids only: topics, count, selection, positions, codes and event ids', () => {
    const entries = [
      entry(1, 'acc_a:who@private.io', secretValue('acc_a', 'e1')),
      entry(2, 'acc_b:x', secretValue('acc_b', 'e2'), 'crm_auth'),
      entry(3, 'acc_a:who@private.io', secretValue('acc_a', 'e3')),
      entry(4, null, 'not json at all, private'),
    ];
    const records = replayAuditEntries(entries, ctx({ code: 'crm_permanent' }));
    expect(records.map((r) => r.accountId)).toEqual(['acc_a', 'acc_b', null]);
    expect(records[0]).toEqual({
      at: new Date('2026-11-25T21:00:00.000Z'),
      actor: { type: 'admin', name: 'ops-grace', role: 'cli' },
      action: 'dead_letter.replay',
      accountId: 'acc_a',
      target: 'crm.deadletter',
      ip: 'bastion-1',
      requestId: 'req-1',
      after: { to: 'crm.replay', count: 2, filter: { code: 'crm_permanent' }, positions: ['0/1', '0/3'], codes: ['crm_permanent'], eventIds: ['e1', 'e3'] },
    });
    // One letter is named like the dashboard names it.
    expect(records[1]?.target).toBe('crm.deadletter/0/2');
    expect(records[2]?.after).toMatchObject({ count: 1, eventIds: [] });
    expect(JSON.stringify(records)).not.toMatch(/private/);
  });

  it('bounds what a record lists, and does not take a hostile account or event id from a letter', () => {
    const many = Array.from({ length: 150 }, (_, i) => entry(i, null, JSON.stringify({ accountId: 'acc_many', eventId: `e${i}` })));
    const [record] = replayAuditEntries(many, ctx({ positions: many.map((e) => `0/${e.offset}`) }));
    const after = record?.after as { count: number; positions: string[]; eventIds: string[]; filter: { positions: string[] } };
    expect([after.count, after.positions.length, after.eventIds.length, after.filter.positions.length]).toEqual([150, 100, 100, 100]);

    const hostile = [
      entry(1, null, JSON.stringify({ accountId: 'x'.repeat(65), eventId: 'y'.repeat(129) })),
      entry(2, null, JSON.stringify({ accountId: 'a b' })),
    ];
    const [nobody] = replayAuditEntries(hostile, ctx({ code: 'c' }));
    expect(nobody).toMatchObject({ accountId: null, after: { count: 2, eventIds: [] } });
  });
});

describe('operatorName', () => {
  it('is INGEST_OPERATOR when set, else the OS user', () => {
    expect(operatorName('ops-grace')).toBe('ops-grace');
    expect(operatorName(undefined)).toMatch(/^\S+$/);
  });
});
