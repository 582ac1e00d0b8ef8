import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { rawEventKey } from '@ingest/domain';
import { createDedupeWindow, fingerprint, fingerprintOfKey } from './dedupe-window.js';

const DAY = 24 * 3600 * 1000;
const fp = (eventId: string) => fingerprint('acc_1', eventId);

describe('dedupe window', () => {
  it('reports a key as seen within the window and not after it', () => {
    const w = createDedupeWindow(7 * DAY);
    w.mark(fp('k'), 0);
    expect(w.seen(fp('k'), 1)).toBe(true);
    expect(w.seen(fp('k'), 7 * DAY - 1)).toBe(true);
    expect(w.seen(fp('k'), 7 * DAY)).toBe(false);
    expect(w.seen(fp('other'), 1)).toBe(false);
  });

  it('keeps the earliest mark when marks are replayed out of order', () => {
    const w = createDedupeWindow(10);
    w.mark(fp('k'), 5);
    w.mark(fp('k'), 3);
    w.mark(fp('k'), 8);
    expect(w.seen(fp('k'), 12)).toBe(true);
    expect(w.seen(fp('k'), 13)).toBe(false);
    expect(w.size).toBe(1);
  });

  it('starts a new window when a mark comes after the old one expired', () => {
    const w = createDedupeWindow(10);
    w.mark(fp('k'), 0);
    w.mark(fp('k'), 12);
    expect(w.seen(fp('k'), 15)).toBe(true);
    expect(w.seen(fp('k'), 22)).toBe(false);
  });

  it('sweeps expired marks only', () => {
    const w = createDedupeWindow(80);
    w.mark(fp('old'), 0);
    w.mark(fp('new'), 50);
    expect(w.sweep(85)).toBe(1);
    expect(w.size).toBe(1);
    expect(w.seen(fp('new'), 85)).toBe(true);
    expect(w.seen(fp('old'), 79)).toBe(false);
  });

  it('keeps a renewed mark until its new window ends, even in an old segment', () => {
    const w = createDedupeWindow(80);
    w.mark(fp('k'), 0);
    w.mark(fp('k'), 100); // a new window, recorded in the segment of time 0
    w.sweep(150);
    expect(w.seen(fp('k'), 170)).toBe(true);
  });

  it('tells apart many keys and grows its tables without losing any', () => {
    const w = createDedupeWindow(7 * DAY);
    for (let i = 0; i < 50_000; i++) w.mark(fp(`e${i}`), i);
    expect(w.size).toBe(50_000);
    let seen = 0;
    for (let i = 0; i < 50_000; i++) if (w.seen(fp(`e${i}`), 60_000)) seen++;
    let unseen = 0;
    for (let i = 50_000; i < 100_000; i++) if (!w.seen(fp(`e${i}`), 60_000)) unseen++;
    expect([seen, unseen]).toEqual([50_000, 50_000]);
    // Bounded: 24 bytes a slot at a load of at least 35% after growth.
    expect(w.bytes).toBeLessThan(50_000 * 24 * 3);
  });

  it('holds at most maxMarks, dropping the oldest marks first', () => {
    let evicted = 0;
    const w = createDedupeWindow(7 * DAY, { maxMarks: 8_000, onEvict: (count) => (evicted += count) });
    for (let i = 0; i < 20_000; i++) w.mark(fp(`e${i}`), i);
    expect(w.size).toBeLessThanOrEqual(8_000);
    expect(w.size).toBeGreaterThanOrEqual(7_000);
    expect(evicted).toBe(20_000 - w.size);
    expect(w.seen(fp('e19999'), 20_000)).toBe(true);
    expect(w.seen(fp('e0'), 20_000)).toBe(false);
  });

  it('reuses the slots of dropped marks: the table stays the size of its bound', () => {
    const w = createDedupeWindow(7 * DAY, { maxMarks: 8_000 });
    for (let i = 0; i < 20_000; i++) w.mark(fp(`e${i}`), i);
    const atBound = w.bytes;
    for (let i = 20_000; i < 400_000; i++) w.mark(fp(`e${i}`), i);
    // 8,000 live marks at a load of at most 70 %: 16,384 slots, or 32,768 after a rebuild.
    expect(w.bytes).toBeLessThanOrEqual(32_768 * 24);
    expect(w.bytes).toBeLessThanOrEqual(Math.max(atBound, 32_768 * 24));
    // The newest `size` marks are held, every older one is gone.
    const held = w.size;
    expect(held).toBeGreaterThanOrEqual(7_000);
    let seen = 0;
    for (let i = 400_000 - held; i < 400_000; i++) if (w.seen(fp(`e${i}`), 400_000)) seen++;
    let forgotten = 0;
    for (let i = 0; i < 400_000 - held; i++) if (!w.seen(fp(`e${i}`), 400_000)) forgotten++;
    expect({ seen, forgotten }).toEqual({ seen: held, forgotten: 400_000 - held });
  });

  it('marks a key again after its segment was dropped, once', () => {
    const w = createDedupeWindow(7 * DAY, { maxMarks: 800 });
    w.mark(fp('again'), 0);
    for (let i = 1; i < 2_000; i++) w.mark(fp(`e${i}`), i);
    expect(w.seen(fp('again'), 2_000)).toBe(false);
    w.mark(fp('again'), 2_000);
    const once = w.size;
    w.mark(fp('again'), 2_001);
    expect(w.seen(fp('again'), 2_002)).toBe(true);
    expect(w.size).toBe(once);
  });

  it('goes on after a sweep emptied it', () => {
    const w = createDedupeWindow(80);
    w.mark(fp('a'), 0);
    w.mark(fp('b'), 20);
    expect(w.sweep(200)).toBe(2);
    expect(w.size).toBe(0);
    w.mark(fp('c'), 200);
    w.mark(fp('a'), 201);
    expect([w.seen(fp('a'), 210), w.seen(fp('b'), 210), w.seen(fp('c'), 210), w.size]).toEqual([true, false, true, 2]);
    expect(w.sweep(300)).toBe(2);
  });

  it('holds its bound with nobody told of the evictions (onEvict is optional)', () => {
    const w = createDedupeWindow(7 * DAY, { maxMarks: 8_000 });
    for (let i = 0; i < 20_000; i++) w.mark(fp(`e${i}`), i);
    expect(w.size).toBeLessThanOrEqual(8_000);
    expect(w.seen(fp('e19999'), 20_000)).toBe(true);
  });

  it('builds fingerprints from the same key as the events.raw message key', () => {
    // Account ids are acc_ + base62 (no colon), so the first colon separates the two parts.
    expect(fingerprintOfKey(rawEventKey('acc_1', 'a:b'))).toBe(fingerprint('acc_1', 'a:b'));
    expect(fingerprint('acc_1', 'a:b')).toHaveLength(16);
    expect(fingerprint('acc_1', 'a:b')).not.toBe(fingerprint('acc_2', 'a:b'));
    // The MD5 digest's 16 bytes, one latin1 character each: what the changelog has always carried.
    expect(Buffer.from(fingerprint('acc_1', 'a:b'), 'latin1')).toEqual(createHash('md5').update('acc_1:a:b').digest());
  });

  it('answers as a plain map of earliest marks would, through sweeps, dropped segments and rebuilds', () => {
    // No bound (eviction forgets on purpose); time moves forward for look-ups and sweeps, as in
    // the consumer, while marks may come with earlier times (replays), though not from before the
    // last sweep: a sweep forgets expired marks, so one replayed after it within the forgotten
    // mark's window starts afresh, which a plain map cannot tell. Thousands of marks over many
    // segment spans: the table rebuilds and reuses swept segments' slots.
    const WINDOW = 800;
    const op = fc.oneof(
      fc.record({ kind: fc.constant('mark' as const), key: fc.integer({ min: 0, max: 2_999 }), back: fc.integer({ min: 0, max: 1_000 }) }),
      fc.record({ kind: fc.constant('seen' as const), key: fc.integer({ min: 0, max: 2_999 }), back: fc.constant(0) }),
      fc.record({ kind: fc.constant('sweep' as const), key: fc.constant(0), back: fc.constant(0) }),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(op, fc.integer({ min: 0, max: 3 })), { minLength: 500, maxLength: 3_000 }), (ops) => {
        const w = createDedupeWindow(WINDOW);
        const model = new Map<number, number>();
        let now = 0;
        let swept = Number.NEGATIVE_INFINITY;
        for (const [o, step] of ops) {
          now += step;
          if (o.kind === 'mark') {
            const at = Math.max(now - o.back, swept);
            const existing = model.get(o.key);
            if (existing === undefined || at < existing || at - existing >= WINDOW) model.set(o.key, at);
            w.mark(fp(`k${o.key}`), at);
          } else if (o.kind === 'seen') {
            const first = model.get(o.key);
            expect(w.seen(fp(`k${o.key}`), now)).toBe(first !== undefined && now - first < WINDOW);
          } else {
            w.sweep(now);
            swept = now;
          }
        }
        let agree = 0;
        for (const [key, first] of model) if (w.seen(fp(`k${key}`), now) === now - first < WINDOW) agree++;
        expect(agree).toBe(model.size);
      }),
      { numRuns: 25 },
    );
  });
});
