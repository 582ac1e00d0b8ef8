import type { EventRecord } from '@ingest/schemas';
import { IDENTITY_TEST_AT as AT, identityTestRecord as record } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import { joinedRecord, linksOf, refsToLookUp } from './identity-links.js';
import { decodeIdentityEntry, encodeIdentityEntry, type IdentityEntry, parseIdentityMapKey, type PersonRef } from './identity-record.js';

/** A map as the batch sees it: the known entries plus what linksOf writes. */
function mapOf(entries: Record<string, Omit<IdentityEntry, 'v' | 'updatedAt'>> = {}) {
  const known = new Map<PersonRef, IdentityEntry>(Object.entries(entries).map(([ref, e]) => [ref as PersonRef, { v: 1, updatedAt: 1, ...e }]));
  const lookUp = (ref: PersonRef) => known.get(ref);
  const learn = (r: EventRecord) => {
    const links = linksOf(r, lookUp, AT);
    for (const [ref, entry] of links.writes) known.set(ref, entry);
    return links;
  };
  return { known, lookUp, learn };
}

describe('identity links', () => {
  it('an identify links the user to the email and the anonymous id to the user; later tracks of either are joined', () => {
    const map = mapOf();
    const links = map.learn(record({ eventName: '$identify', email: 'ada@acme.io', userId: 'u1', anonymousId: 'a1' }));
    expect(links.writes.map(([ref, e]) => [ref, e.email ?? e.userId])).toEqual([
      ['u:u1', 'ada@acme.io'],
      ['a:a1', 'u1'],
    ]);
    expect(joinedRecord(record({ userId: 'u1' }), map.lookUp)).toMatchObject({ email: 'ada@acme.io', domain: null, identitySource: 'map' });
    expect(joinedRecord(record({ anonymousId: 'a1' }), map.lookUp)).toMatchObject({ email: 'ada@acme.io', identitySource: 'map' });
    // An event with its own email or domain keeps it; an unknown person is not joined.
    expect(joinedRecord(record({ userId: 'u1', domain: 'acme.io' }), map.lookUp)).toBeUndefined();
    expect(joinedRecord(record({ userId: 'u2' }), map.lookUp)).toBeUndefined();
    // The same identify again writes nothing new.
    expect(map.learn(record({ eventName: '$identify', email: 'ada@acme.io', userId: 'u1', anonymousId: 'a1' })).writes).toEqual([]);
  });

  it('a group adds the domain to the same entry; an anonymous identify keys the email on the anonymous id', () => {
    const map = mapOf({ 'u:u1': { email: 'ada@acme.io' } });
    map.learn(record({ eventName: '$group', domain: 'acme.io', userId: 'u1' }));
    expect(map.known.get('u:u1')).toMatchObject({ email: 'ada@acme.io', domain: 'acme.io' });
    map.learn(record({ eventName: '$identify', email: 'bo@acme.io', anonymousId: 'a9' }));
    expect(joinedRecord(record({ anonymousId: 'a9' }), map.lookUp)?.email).toBe('bo@acme.io');
  });

  it('an alias links the previous id to the user, and gives an unknown user the email the previous id had', () => {
    const map = mapOf({ 'a:anon': { email: 'cy@acme.io' } });
    const links = map.learn(record({ eventName: '$alias', userId: 'u3', properties: { previousId: 'anon' } }));
    expect(links.conflict).toBeUndefined();
    expect(map.known.get('a:anon')?.userId).toBe('u3');
    expect(map.known.get('u:u3')?.email).toBe('cy@acme.io');
    expect(refsToLookUp(record({ eventName: '$alias', userId: 'u3', properties: { previousId: 'anon' } }))).toEqual(['u:u3', 'a:anon', 'u:anon']);
  });

  it('refuses an alias that would merge two people known under different emails, and writes nothing', () => {
    const map = mapOf({ 'u:bo': { email: 'bo@acme.io' }, 'u:cy': { email: 'cy@acme.io' } });
    const links = map.learn(record({ eventName: '$alias', userId: 'cy', properties: { previousId: 'bo' } }));
    expect(links.conflict).toMatch(/different emails/);
    expect(links.writes).toEqual([]);
    // The same email on both sides is no conflict.
    const same = mapOf({ 'u:bo': { email: 'bo@acme.io' }, 'u:bo2': { email: 'bo@acme.io' } });
    expect(same.learn(record({ eventName: '$alias', userId: 'bo2', properties: { previousId: 'bo' } })).conflict).toBeUndefined();
  });

  it('the record: keys, versions, and fields a newer writer adds', () => {
    expect(parseIdentityMapKey('acc_x:u:user:with:colons')).toEqual({ accountId: 'acc_x', ref: 'u:user:with:colons' });
    expect(parseIdentityMapKey('acc_x:z:1')).toBeUndefined();
    const entry: IdentityEntry = { v: 1, email: 'ada@acme.io', updatedAt: 5 };
    expect(decodeIdentityEntry(encodeIdentityEntry(entry))).toEqual(entry);
    expect(decodeIdentityEntry(JSON.stringify({ ...entry, phone: '+1', merges: [1] }))).toEqual(entry);
    expect(decodeIdentityEntry(JSON.stringify({ ...entry, v: 2 }))).toBeUndefined();
    expect(decodeIdentityEntry('not json')).toBeUndefined();
    expect(decodeIdentityEntry(null)).toBeUndefined();
  });
});
