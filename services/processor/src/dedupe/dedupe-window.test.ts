import { describe, expect, it } from 'vitest';
import { createDedupeWindow, dedupeKey } from './dedupe-window.js';

const DAY = 24 * 3600 * 1000;

describe('dedupe window', () => {
  it('reports a key as seen within the window and not after it', () => {
    const w = createDedupeWindow(7 * DAY);
    w.mark('k', 0);
    expect(w.seen('k', 1)).toBe(true);
    expect(w.seen('k', 7 * DAY - 1)).toBe(true);
    expect(w.seen('k', 7 * DAY)).toBe(false);
    expect(w.seen('other', 1)).toBe(false);
  });

  it('keeps the earliest mark when marks are replayed out of order', () => {
    const w = createDedupeWindow(10);
    w.mark('k', 5);
    w.mark('k', 3);
    w.mark('k', 8);
    expect(w.seen('k', 12)).toBe(true);
    expect(w.seen('k', 13)).toBe(false);
  });

  it('starts a new window when a mark comes after the old one expired', () => {
    const w = createDedupeWindow(10);
    w.mark('k', 0);
    w.mark('k', 12);
    expect(w.seen('k', 15)).toBe(true);
    expect(w.seen('k', 22)).toBe(false);
  });

  it('sweeps expired marks only', () => {
    const w = createDedupeWindow(10);
    w.mark('old', 0);
    w.mark('new', 5);
    expect(w.sweep(12)).toBe(1);
    expect(w.size).toBe(1);
    expect(w.seen('new', 12)).toBe(true);
  });

  it('builds the same key as the events.raw message key', () => {
    // Account ids are acc_ + base62 (no colon), so the first colon separates the two parts.
    expect(dedupeKey('acc_1', 'a:b')).toBe('acc_1:a:b');
  });
});
