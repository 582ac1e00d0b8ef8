import { describe, expect, it } from 'vitest';
import { tabSeparatedBody } from './tab-separated-body.js';

const joined = (lines: string[]) => Buffer.from(`${lines.join('\n')}\n`);

describe('tabSeparatedBody', () => {
  it('holds exactly the bytes of the lines joined by newlines, ending in one', () => {
    const cases: string[][] = [
      ['a\tb', '', 'c'],
      Array.from({ length: 5_000 }, (_, i) => `acc_1\tid-${i}\tpage_viewed\t{"n":${i}}`),
      // Two-byte, three-byte and astral characters (a surrogate pair is four bytes): the buffer grows.
      Array.from({ length: 2_000 }, (_, i) => `caf\u00e9 ${i}\t\u20ac\u20ac\u20ac\u20ac\t\u{1f600}\u{1f600}`),
      ['x'.repeat(10), '\u20ac'.repeat(100_000), 'y'],
      [''],
    ];
    for (const lines of cases) expect(tabSeparatedBody(lines).equals(joined(lines))).toBe(true);
  });

  it('does not share its bytes with another body', () => {
    const a = tabSeparatedBody(['first']);
    const b = tabSeparatedBody(['second']);
    expect([a.toString(), b.toString()]).toEqual(['first\n', 'second\n']);
  });
});
