import { describe, expect, it } from 'vitest';
import { createEventValidator, toEventRecord } from './validate-event.js';

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const validate = createEventValidator({ generateId: () => 'generated-id' });
const check = (event: unknown) => validate(event, NOW);

function errorsOf(event: unknown) {
  const r = check(event);
  if (r.ok) throw new Error('expected a rejection');
  return r.errors;
}

describe('event validator: accepted events are normalised', () => {
  it('normalises identity and timestamp, keeps properties, generates an id', () => {
    const r = check({
      eventName: 'Signed Up',
      email: '  Ada@Example.COM ',
      domain: 'Example.COM.',
      timestamp: '2026-11-21T13:30:00.5+01:30',
      properties: { plan: 'pro', n: { deep: [1] } },
    });
    expect(r).toEqual({
      ok: true,
      event: {
        eventId: 'generated-id',
        eventName: 'Signed Up',
        email: 'ada@example.com',
        domain: 'example.com',
        timestampMs: Date.UTC(2026, 10, 21, 12, 0, 0, 500),
        properties: { plan: 'pro', n: { deep: [1] } },
        generatedId: true,
      },
    });
  });

  it('builds the wire record field by field, leaving the validator extras out', () => {
    const r = check({ eventName: 'x', domain: 'acme.io', eventId: 'mine' });
    if (!r.ok) throw new Error('expected acceptance');
    expect(r.event.generatedId).toBe(false);
    expect(toEventRecord(r.event, { accountId: 'acc_1', receivedAtMs: 5, source: 'bulk', jobId: 'j' })).toEqual({
      v: 1,
      accountId: 'acc_1',
      eventId: 'mine',
      eventName: 'x',
      email: null,
      domain: 'acme.io',
      timestampMs: NOW,
      receivedAtMs: 5,
      properties: {},
      source: 'bulk',
      jobId: 'j',
    });
  });

  it('defaults the timestamp to the time of receipt and keeps a supplied eventId', () => {
    const r = check({ eventName: 'x', domain: 'acme.io', eventId: 'my-id-1' });
    expect(r.ok && r.event).toMatchObject({ eventId: 'my-id-1', timestampMs: NOW, email: null, domain: 'acme.io', properties: {} });
  });

  it('turns Unicode domains into punycode', () => {
    const r = check({ eventName: 'x', domain: 'Bücher.example' });
    expect(r.ok && r.event.domain).toBe('xn--bcher-kva.example');
  });

  it('accepts any past date from 1970 on and up to 24 h ahead', () => {
    expect(check({ eventName: 'x', domain: 'a.io', timestamp: '1970-01-01T00:00:00Z' }).ok).toBe(true);
    expect(check({ eventName: 'x', domain: 'a.io', timestamp: '2026-11-22T11:59:59Z' }).ok).toBe(true);
  });

  it('accepts exactly 50 properties', () => {
    const properties = Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, i]));
    expect(check({ eventName: 'x', domain: 'a.io', properties }).ok).toBe(true);
  });
});

describe('event validator: rejections carry a field, a code and a message', () => {
  it.each([
    ['not an object', 'nope', [{ field: '', code: 'invalid_type' }]],
    ['missing eventName', { email: 'a@b.io' }, [{ field: '/eventName', code: 'required' }]],
    ['blank eventName', { eventName: '  ', email: 'a@b.io' }, [{ field: '/eventName', code: 'required' }]],
    ['eventName too long', { eventName: 'x'.repeat(256), email: 'a@b.io' }, [{ field: '/eventName', code: 'too_long' }]],
    ['wrong type', { eventName: 42, email: 'a@b.io' }, [{ field: '/eventName', code: 'invalid_type' }]],
    ['no identity', { eventName: 'x' }, [{ field: '/email', code: 'required' }]],
    ['bad email', { eventName: 'x', email: 'not-an-email' }, [{ field: '/email', code: 'invalid_format' }]],
    ['email with two @', { eventName: 'x', email: 'a@b@c.io' }, [{ field: '/email', code: 'invalid_format' }]],
    ['domain with scheme', { eventName: 'x', domain: 'https://acme.io' }, [{ field: '/domain', code: 'invalid_format' }]],
    ['domain with path', { eventName: 'x', domain: 'acme.io/about' }, [{ field: '/domain', code: 'invalid_format' }]],
    ['domain with port', { eventName: 'x', domain: 'acme.io:443' }, [{ field: '/domain', code: 'invalid_format' }]],
    ['IP address as domain', { eventName: 'x', domain: '10.0.0.1' }, [{ field: '/domain', code: 'invalid_format' }]],
    ['unknown field', { eventName: 'x', email: 'a@b.io', userId: 7 }, [{ field: '/userId', code: 'unknown_field' }]],
    ['timestamp without zone', { eventName: 'x', email: 'a@b.io', timestamp: '2026-11-21T10:00:00' }, [{ field: '/timestamp', code: 'invalid_format' }]],
    ['impossible date', { eventName: 'x', email: 'a@b.io', timestamp: '2024-02-30T00:00:00Z' }, [{ field: '/timestamp', code: 'invalid_format' }]],
    ['timestamp as number', { eventName: 'x', email: 'a@b.io', timestamp: 1700000000 }, [{ field: '/timestamp', code: 'invalid_type' }]],
    ['far future', { eventName: 'x', email: 'a@b.io', timestamp: '2026-11-22T12:00:01Z' }, [{ field: '/timestamp', code: 'in_future' }]],
    ['before 1970', { eventName: 'x', email: 'a@b.io', timestamp: '1969-12-31T23:59:59Z' }, [{ field: '/timestamp', code: 'out_of_range' }]],
    ['eventId with a space', { eventName: 'x', email: 'a@b.io', eventId: 'a b' }, [{ field: '/eventId', code: 'invalid_format' }]],
    ['empty eventId', { eventName: 'x', email: 'a@b.io', eventId: '' }, [{ field: '/eventId', code: 'too_short' }]],
    ['properties not an object', { eventName: 'x', email: 'a@b.io', properties: [1] }, [{ field: '/properties', code: 'invalid_type' }]],
    [
      '51 properties',
      { eventName: 'x', email: 'a@b.io', properties: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, i])) },
      [{ field: '/properties', code: 'too_many_keys' }],
    ],
    [
      'property key too long',
      { eventName: 'x', email: 'a@b.io', properties: { ['k'.repeat(256)]: 1 } },
      [{ field: `/properties/${'k'.repeat(256)}`, code: 'too_long' }],
    ],
    ['constructor key', { eventName: 'x', email: 'a@b.io', properties: { constructor: 'x' } }, [{ field: '/properties/constructor', code: 'forbidden_key' }]],
    ['prototype key', { eventName: 'x', email: 'a@b.io', properties: { prototype: 1 } }, [{ field: '/properties/prototype', code: 'forbidden_key' }]],
    [
      'deep nesting',
      { eventName: 'x', email: 'a@b.io', properties: { a: JSON.parse(`${'['.repeat(20)}${']'.repeat(20)}`) } },
      [{ field: '/properties/a', code: 'too_deep' }],
    ],
  ])('%s', (_name, event, expected) => {
    const errors = errorsOf(event);
    expect(errors.map(({ field, code }) => ({ field, code }))).toEqual(expected);
    for (const e of errors) expect(e.message.length).toBeGreaterThan(3);
  });

  it('reports every problem of an event at once', () => {
    const errors = errorsOf({ eventName: 'x', email: 'bad', domain: 'also bad', timestamp: 'yesterday' });
    expect(errors.map((e) => e.field).sort()).toEqual(['/domain', '/email', '/timestamp']);
  });

  it('returns the supplied eventId with the rejection', () => {
    const r = check({ eventName: 'x', email: 'bad', eventId: 'abc' });
    expect(r.ok).toBe(false);
    expect(!r.ok && r.eventId).toBe('abc');
  });

  it('escapes JSON Pointer characters in property keys', () => {
    const errors = errorsOf({ eventName: 'x', email: 'a@b.io', properties: { 'a/b~c': JSON.parse(`${'{"x":'.repeat(20)}1${'}'.repeat(20)}`) } });
    expect(errors[0]?.field).toBe('/properties/a~1b~0c');
  });
});
