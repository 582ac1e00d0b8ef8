import { describe, expect, it } from 'vitest';
import { createTimeSlicer } from './time-slicer.js';

/** Busy work for about `ms`. */
function spin(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // burn CPU like parsing does
  }
}

describe('createTimeSlicer', () => {
  it('lets other work run between the slices of long CPU work done by several holders at once', async () => {
    const slicer = createTimeSlicer(2);
    const log: string[] = [];
    const worker = async (name: string) => {
      const pace = slicer.pacer();
      for (let i = 0; i < 20; i++) {
        spin(0.5);
        log.push(name);
        const turn = pace();
        if (turn) await turn;
      }
    };
    // Another request's I/O: a timer that should fire long before the workers are done.
    let ticks = 0;
    const ticker = setInterval(() => {
      ticks += 1;
      log.push('tick');
    }, 1);
    await Promise.all([worker('a'), worker('b'), worker('c')]);
    clearInterval(ticker);
    expect(ticks).toBeGreaterThan(3);
    // No holder ran two slices in a row while others waited: turns alternate.
    const slices = log.filter((e) => e !== 'tick').join('');
    expect(slices).not.toMatch(/a{9}|b{9}|c{9}/);
    expect(log.filter((e) => e === 'a')).toHaveLength(20);
  });

  it('does not wait while the slice lasts', () => {
    const pace = createTimeSlicer(1_000).pacer();
    expect(pace()).toBeUndefined();
  });
});
