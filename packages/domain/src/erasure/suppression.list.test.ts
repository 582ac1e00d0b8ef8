import { describe, expect, it } from 'vitest';
import { decodeSuppression, encodeSuppression, identifierHash, normalizeIdentifier, suppressionKey } from './erasure-record.js';
import { createSuppressionSet } from './suppression.list.js';

const record = (accountId: string, type: 'email' | 'domain', value: string) => {
  const r = { v: 1 as const, id: 'e1', accountId, type, identifierHash: identifierHash(accountId, type, value), erasedAt: '2026-11-27T00:00:00.000Z' };
  return { key: suppressionKey(r), value: encodeSuppression(r) };
};

describe('the erasure suppression set', () => {
  it('suppresses the erased email or domain in its account only', () => {
    const set = createSuppressionSet();
    const ada = record('acc_1', 'email', 'ada@example.com');
    set.apply(ada.key, ada.value);
    const company = record('acc_1', 'domain', 'gone.example');
    set.apply(company.key, company.value);
    expect(set.size).toBe(2);
    expect(set.suppressed({ accountId: 'acc_1', email: 'ada@example.com', domain: null })).toBe(true);
    // The company's events, whoever sent them; a person of the company is suppressed through the domain.
    expect(set.suppressed({ accountId: 'acc_1', email: null, domain: 'gone.example' })).toBe(true);
    expect(set.suppressed({ accountId: 'acc_1', email: 'bob@gone.example', domain: 'gone.example' })).toBe(true);
    expect(set.suppressed({ accountId: 'acc_1', email: 'bob@example.com', domain: 'example.com' })).toBe(false);
    // Another account's Ada is another person.
    expect(set.suppressed({ accountId: 'acc_2', email: 'ada@example.com', domain: null })).toBe(false);
    expect(set.suppressed({ accountId: 'acc_1', email: null, domain: null })).toBe(false);
  });

  it('lifts a suppression on a tombstone, also for an account id holding a slash', () => {
    const set = createSuppressionSet();
    const ada = record('acc/odd', 'email', 'ada@example.com');
    set.apply(ada.key, ada.value);
    set.apply(ada.key, ada.value);
    expect(set.size).toBe(1);
    set.apply(ada.key, null);
    expect(set.size).toBe(0);
    expect(set.suppressed({ accountId: 'acc/odd', email: 'ada@example.com' })).toBe(false);
  });

  it('keeps a newer version of the record (fails closed) and ignores what is not a suppression', () => {
    const set = createSuppressionSet();
    const hash = identifierHash('acc_1', 'email', 'ada@example.com');
    set.apply('k', JSON.stringify({ v: 2, accountId: 'acc_1', type: 'email', identifierHash: hash, extra: { a: 1 } }));
    expect(set.suppressed({ accountId: 'acc_1', email: 'ada@example.com' })).toBe(true);
    for (const junk of ['', '{', '[]', 'null', JSON.stringify({ accountId: 'acc_1', type: 'email', identifierHash: 'not-hex' })]) set.apply('k2', junk);
    expect(set.size).toBe(1);
    expect(decodeSuppression(Buffer.from('{"accountId":1}'))).toBeNull();
  });

  it('keeps no identifier in clear: the key and value hold the hash only', () => {
    const ada = record('acc_1', 'email', 'ada@example.com');
    expect(`${ada.key} ${ada.value}`).not.toContain('ada');
    expect(ada.key).toMatch(/^acc_1\/email\/[0-9a-f]{64}$/);
  });
});

describe('identifier normalisation and hashing', () => {
  it('normalises as the event rules do, so the hash matches the stored events', () => {
    expect(normalizeIdentifier('email', '  Ada@Example.COM ')).toEqual({ ok: true, value: 'ada@example.com' });
    expect(normalizeIdentifier('domain', 'Example.COM.')).toEqual({ ok: true, value: 'example.com' });
    expect(normalizeIdentifier('domain', 'bücher.example')).toEqual({ ok: true, value: 'xn--bcher-kva.example' });
    for (const bad of ['', 'no-at', 'a@b', 'a b@example.com']) expect(normalizeIdentifier('email', bad).ok).toBe(false);
    for (const bad of ['https://example.com', 'example', '1.2.3.4', 'example.com/x']) expect(normalizeIdentifier('domain', bad).ok).toBe(false);
  });

  it('hashes account, type and value apart: no two inputs share a hash by concatenation', () => {
    expect(identifierHash('acc_1', 'email', 'a@b.co')).not.toBe(identifierHash('acc_1', 'domain', 'a@b.co'));
    expect(identifierHash('acc_1', 'email', 'a@b.co')).not.toBe(identifierHash('acc_2', 'email', 'a@b.co'));
    expect(identifierHash('a', 'b\u0000c', 'd')).not.toBe(identifierHash('a\u0000b', 'c', 'd'));
  });
});
