import { domainToASCII } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normalizeDomain, normalizeEmail } from './identity.js';

/** The rule before the plain-ASCII fast path: every host through domainToASCII. */
const LABEL = '(?!-)[a-z0-9-]{1,63}(?<!-)';
const HOSTNAME = new RegExp(`^(?=.{1,253}$)${LABEL}(\\.${LABEL})+$`);
const TOP_LEVEL = /\.(?:xn--[a-z0-9-]+|[a-z]{2,63})$/;
function slowNormalizeDomain(input: string): string | undefined {
  const trimmed = input.trim().toLowerCase().replace(/\.$/, '');
  if (/[/:@?#\s]/.test(trimmed)) return undefined;
  const ascii = domainToASCII(trimmed);
  return ascii && HOSTNAME.test(ascii) && TOP_LEVEL.test(ascii) ? ascii : undefined;
}
const fast = (input: string) => {
  const r = normalizeDomain(input);
  return r.ok ? r.value : undefined;
};

// Pieces that reach every branch of domainToASCII's ASCII handling: numbers (IPv4 forms such as
// 0x7f and 017), punycode labels valid and not, hyphens at label edges and in places 3-4, empty labels.
const piece = fc.constantFrom(
  'a',
  'b',
  'z',
  'co',
  'com',
  '0',
  '1',
  '9',
  '0x',
  '7f',
  '017',
  '-',
  '--',
  'xn--',
  'xn--bcher-kva',
  'xn--zz',
  '.',
  '..',
  'A',
  'é',
  'ü',
);
const host = fc.array(piece, { minLength: 1, maxLength: 12 }).map((parts) => parts.join(''));

describe('normalizeDomain', () => {
  it('gives what domainToASCII for every host gave, on generated hosts (the fast path changes no answer)', () => {
    fc.assert(
      fc.property(host, (h) => {
        expect(fast(h)).toBe(slowNormalizeDomain(h));
      }),
      { numRuns: 20_000, seed: 20261129 },
    );
  });

  it('keeps IPv4-like and punycode hosts on the full path', () => {
    expect(fast('Example.COM.')).toBe('example.com');
    expect(fast('bücher.example')).toBe('xn--bcher-kva.example');
    expect(fast('xn--bcher-kva.example')).toBe('xn--bcher-kva.example');
    expect(fast('xn--zz.example')).toBe(slowNormalizeDomain('xn--zz.example'));
    expect(fast('127.0.0.1')).toBeUndefined();
    expect(fast('0x7f.1')).toBeUndefined();
    expect(fast('a.0x7f')).toBeUndefined();
    expect(fast('-a.example')).toBeUndefined();
  });
});

describe('normalizeEmail', () => {
  it('normalises the domain part the same way', () => {
    expect(normalizeEmail(' Ada@Example.COM ')).toEqual({ ok: true, value: 'ada@example.com' });
    expect(normalizeEmail('ada@bücher.example')).toEqual({ ok: true, value: 'ada@xn--bcher-kva.example' });
    expect(normalizeEmail('ada@127.0.0.1').ok).toBe(false);
  });
});
