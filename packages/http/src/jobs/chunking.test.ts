import { describe, expect, it } from 'vitest';
import { chunkItems, MAX_EVENT_BYTES } from './chunking.js';

const item = (index: number, size = 10) => ({ index, event: { eventName: 'x'.repeat(size) } });

describe('chunkItems', () => {
  it('closes a chunk at the item limit and keeps order', () => {
    const chunks = chunkItems(
      Array.from({ length: 1201 }, (_, i) => item(i)),
      500,
    );
    expect(chunks.map((c) => c.length)).toEqual([500, 500, 201]);
    expect(chunks.flat().map((i) => i.index)).toEqual(Array.from({ length: 1201 }, (_, i) => i));
  });

  it('closes a chunk at the byte limit', () => {
    const chunks = chunkItems([item(0, 600), item(1, 600), item(2, 600)], 500, 1300);
    expect(chunks.map((c) => c.map((i) => i.index))).toEqual([[0, 1], [2]]);
  });

  it('replaces an oversize event by a per-event error that keeps index and row', () => {
    const [chunk] = chunkItems([{ index: 7, row: 9, event: { eventName: 'x'.repeat(MAX_EVENT_BYTES) } }]);
    expect(chunk?.[0]).toEqual({ index: 7, row: 9, event: null, error: { code: 'too_large', message: expect.stringContaining('at most 1048576 bytes') } });
  });

  it('returns no chunks for no items', () => {
    expect(chunkItems([])).toEqual([]);
  });
});
