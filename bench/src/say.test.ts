import { describe, expect, it } from 'vitest';
import { n1, signed } from './say.js';

describe('signed', () => {
  it('writes a change with its sign, and a dash when there is none', () => {
    expect([signed(12_345), signed(-3), signed(0), signed(-3.44, n1), signed(undefined), signed(Number.NaN)]).toEqual([
      '+12,345',
      '-3',
      '+0',
      '-3.4',
      '-',
      '-',
    ]);
  });
});
