import type { PlannedOperation } from '@ingest/domain';
import { describe, expect, it } from 'vitest';
import { createCoalescer } from './coalescer.js';

function op(email: string, ruleId = 'r'): PlannedOperation {
  return { ruleId, object: 'contact', key: { email }, set: {}, setOnce: {}, increment: {}, max: {}, min: {}, append: {}, skipped: [] };
}

describe('coalescer', () => {
  it('gathers an account’s operations per record until the window has passed', () => {
    const c = createCoalescer<string>({ windowMs: 500, maxRecords: 100 });
    c.add('acc_a', op('x@a.com'), 'e1', 0);
    c.add('acc_a', op('x@a.com'), 'e2', 100);
    c.add('acc_a', op('y@a.com'), 'e3', 200);
    expect(c.takeDue(499)).toEqual([]);
    expect(c.nextDueInMs(100)).toBe(400);
    const [flush] = c.takeDue(500);
    expect(flush?.accountId).toBe('acc_a');
    expect(flush?.records.map((r) => [r.key, r.ops.map((o) => o.event)])).toEqual([
      ['x@a.com', ['e1', 'e2']],
      ['y@a.com', ['e3']],
    ]);
    expect(c.nextDueInMs(600)).toBeUndefined();
  });

  it('flushes an account early when it holds maxRecords records, others keep waiting', () => {
    const c = createCoalescer<number>({ windowMs: 10_000, maxRecords: 2 });
    c.add('acc_a', op('1@a.com'), 1, 0);
    c.add('acc_b', op('1@b.com'), 2, 0);
    c.add('acc_a', op('2@a.com'), 3, 0);
    expect(c.takeDue(1).map((f) => f.accountId)).toEqual(['acc_a']);
    expect(c.takeDue(1)).toEqual([]);
    expect(c.takeDue(1, true).map((f) => f.accountId)).toEqual(['acc_b']);
  });

  it('says whether an account has buffered operations until they are taken', () => {
    const c = createCoalescer<number>({ windowMs: 10_000, maxRecords: 100 });
    expect(c.has('acc_a')).toBe(false);
    c.add('acc_a', op('1@a.com'), 1, 0);
    expect([c.has('acc_a'), c.has('acc_b')]).toEqual([true, false]);
    expect(c.take('acc_a')?.records).toHaveLength(1);
    expect(c.has('acc_a')).toBe(false);
  });

  it('keeps contacts and companies with the same key apart', () => {
    const c = createCoalescer<number>({ windowMs: 0, maxRecords: 10 });
    c.add('acc_a', op('a.com'), 1, 0);
    c.add('acc_a', { ...op('a.com'), object: 'company', key: { domain: 'a.com' } }, 2, 0);
    expect(c.takeDue(0)[0]?.records.map((r) => r.object)).toEqual(['contact', 'company']);
  });
});
