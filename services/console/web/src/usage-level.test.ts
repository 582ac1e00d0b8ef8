import { describe, expect, it } from 'vitest';
import { usageLevel, usedPercent } from './usage-level.js';

describe('usage level', () => {
  it('warns from 80 % and says exhausted at 100 %', () => {
    expect(usageLevel(0, 1000)).toBe('ok');
    expect(usageLevel(799, 1000)).toBe('ok');
    expect(usageLevel(800, 1000)).toBe('warn');
    expect(usageLevel(999, 1000)).toBe('warn');
    expect(usageLevel(1000, 1000)).toBe('exhausted');
    expect(usageLevel(1200, 1000)).toBe('exhausted');
  });

  it('rounds the percentage down, so 99.9 % is not shown as 100 %', () => {
    expect(usedPercent(999, 1000)).toBe(99);
    expect(usedPercent(5000, 1000)).toBe(100);
    expect(usedPercent(1, 50_000)).toBe(0);
  });
});
