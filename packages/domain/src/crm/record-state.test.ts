import type { PlannedOperation } from './mapping.plan.js';
import { describe, expect, it } from 'vitest';
import { buildRecordWrite, deltaOf, numberFromCrm, seedsFromCrm, setVersion, setWins, simulateApply, stateFieldsOf } from './record-state.js';

const base: PlannedOperation = {
  ruleId: 'r',
  object: 'contact',
  key: { email: 'a@x.com' },
  set: {},
  setOnce: {},
  increment: {},
  max: {},
  min: {},
  append: {},
  skipped: [],
};

describe('record state', () => {
  it('names owned fields by kind', () => {
    const op = { ...base, increment: { logins: 1 }, max: { last_seen: 5 }, append: { plans: ['pro'] }, setOnce: { source: 'ads' } };
    expect(stateFieldsOf(op)).toEqual(['n:logins', 'n:last_seen', 'l:plans', 'o:source']);
  });

  it('turns an operation into apply triples; list items and setOnce values JSON-encoded', () => {
    const op = { ...base, increment: { logins: 2 }, min: { first_seen: 1732000000000 }, append: { plans: ['pro', 3] }, setOnce: { source: 'ads' } };
    expect(deltaOf(op)).toEqual([
      'inc',
      'n:logins',
      '2',
      'min',
      'n:first_seen',
      '1732000000000',
      'app',
      'l:plans',
      '"pro"',
      'app',
      'l:plans',
      '3',
      'once',
      'o:source',
      '{"v":"ads"}',
    ]);
  });

  it('seeds from the CRM only what it has: numbers, ISO times, lists, a setOnce value', () => {
    const current = { logins: '7', last_seen: '2026-11-20T10:00:00.000Z', plans: 'free;pro', source: 'seo', empty: '' };
    expect(seedsFromCrm(['n:logins', 'n:last_seen', 'l:plans', 'o:source', 'o:empty', 'n:unknown'], current)).toEqual([
      'seed',
      'n:logins',
      '7',
      'seed',
      'n:last_seen',
      String(Date.parse('2026-11-20T10:00:00.000Z')),
      'seed',
      'l:plans',
      '["free","pro"]',
      'seed',
      'o:source',
      '{"crm":1}',
    ]);
    expect(seedsFromCrm(['n:logins'], undefined)).toEqual([]);
    expect(numberFromCrm('not a number')).toBeUndefined();
  });

  it('writes absolute values: the set whose version the state kept, state fields from the hash, setOnce only when an event set it', () => {
    const ops = [
      { op: { ...base, set: { plan: 'free', name: 'A' }, increment: { logins: 1 }, setOnce: { source: 'ads' } }, version: '100|e1' },
      {
        op: { ...base, set: { plan: 'pro', meta: { a: 1 } }, increment: { logins: 1 }, append: { tags: ['x'] }, setOnce: { referrer: 'b' } },
        version: '200|e2',
      },
    ];
    const state = {
      'n:logins': '12',
      'l:tags': '["x","y",1]',
      'o:source': '{"v":"ads"}',
      'o:referrer': '{"crm":1}',
      't:plan': '200|e2',
      't:name': '100|e1',
      't:meta': '200|e2',
    };
    expect(buildRecordWrite('contact', 'a@x.com', ops, state)).toEqual({
      object: 'contact',
      key: 'a@x.com',
      properties: { plan: 'pro', name: 'A', meta: '{"a":1}', logins: 12, tags: 'x;y;1', source: 'ads' },
    });
  });

  it('keeps the newest set by event time, ties by eventId in byte order, whatever the order of arrival', () => {
    expect(setWins(undefined, setVersion(5, 'b'))).toBe(true);
    expect(setWins('10|b', '9|z')).toBe(false);
    expect(setWins('10|b', '11|a')).toBe(true);
    expect(setWins('10|b', '10|b')).toBe(true);
    expect(setWins('10|b', '10|a')).toBe(false);
    expect(setWins('10|b', '10|c')).toBe(true);
    // Byte order of UTF-8, as the Lua script compares: 'Z' (0x5a) < 'a' (0x61) < 'é' (0xc3 0xa9).
    expect(setWins('10|a', '10|Z')).toBe(false);
    expect(setWins('10|a', '10|é')).toBe(true);
    const versions = ['30|e3', '10|e1', '20|e2', '30|e2', '10|e9'];
    const final = (order: string[]) => order.reduce((state, v) => simulateApply(state, [], ['set', 't:plan', v]), {} as Record<string, string>)['t:plan'];
    expect(final(versions)).toBe('30|e3');
    expect(final([...versions].reverse())).toBe('30|e3');
    // A late or replayed older set leaves the field out of the write.
    const late = { op: { ...base, set: { plan: 'old' } }, version: '10|e1' };
    expect(buildRecordWrite('contact', 'a@x.com', [late], { 't:plan': '30|e3' }).properties).toEqual({});
  });
});
