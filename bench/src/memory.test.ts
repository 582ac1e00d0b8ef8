import { describe, expect, it } from 'vitest';
import { judgeMemory, type MemoryFigures, memoryFigures } from './memory.js';
import type { Observation } from './observe.js';

const MB = 1024 * 1024;

function reading(atMs: number, rssMb: { gateway: number; processor: number }, marks: number, evicted: number): Observation {
  return {
    atMs,
    load: { requests: 0, byStatus: {}, eventsByStatus: {}, eventsSent: 0, eventsAccepted: 0, eventsRejected: 0, eventsAcceptedRepeated: 0 },
    rows: 0,
    gateway: [],
    processor: [
      { name: 'ingest_dedupe_marks', labels: { partition: '0' }, value: marks / 2 },
      { name: 'ingest_dedupe_marks', labels: { partition: '1' }, value: marks / 2 },
      { name: 'ingest_dedupe_evicted_marks_total', labels: {}, value: evicted },
    ],
    proc: {
      memory: {
        gateway: { rssBytes: rssMb.gateway * MB, peakRssBytes: rssMb.gateway * MB },
        processor: { rssBytes: rssMb.processor * MB, peakRssBytes: rssMb.processor * MB },
      },
    } as unknown as Observation['proc'],
    lag: {},
  };
}

describe('memoryFigures', () => {
  it('compares the reading nearest the middle of the span with the last one, and keeps the highest marks', () => {
    const m = memoryFigures(
      [
        reading(0, { gateway: 100, processor: 200 }, 1_000, 0),
        reading(40_000, { gateway: 110, processor: 300 }, 5_000, 10),
        reading(100_000, { gateway: 120, processor: 310 }, 4_000, 50),
      ],
      2_000,
      12,
    );
    expect(m?.rssMb.processor).toMatchObject({ first: 200, middle: 300, end: 310 });
    expect(m?.marksMax).toBe(5_000);
    expect(m?.marksEnd).toBe(4_000);
    expect(m?.evicted).toBe(50);
    expect(m?.spanS).toBe(100);
  });

  it('has nothing to say without readings', () => {
    expect(memoryFigures([], 2_000, 12)).toBeUndefined();
  });
});

describe('judgeMemory', () => {
  const bounded: MemoryFigures = {
    boundPerPartition: 20_000,
    partitions: 12,
    marksMax: 240_000,
    marksEnd: 239_000,
    markMbEnd: 20,
    evicted: 1_000,
    spanS: 100,
    rssMb: { gateway: { middle: 150, end: 160 }, processor: { middle: 400, end: 439 } },
    redisUsedMb: {},
  };

  it('passes marks at the bound, evictions and RSS within 10% or 50 MB', () => {
    expect(judgeMemory(bounded)).toEqual({ ok: true, problems: [] });
  });

  it('fails marks above the bound', () => {
    const v = judgeMemory({ ...bounded, marksMax: 240_001 });
    expect(v.ok).toBe(false);
    expect(v.problems[0]).toContain('above the bound');
  });

  it('fails when the bound was never reached', () => {
    expect(judgeMemory({ ...bounded, evicted: 0 }).ok).toBe(false);
  });

  it('fails RSS that grew by more than the tolerance in the second half', () => {
    const v = judgeMemory({ ...bounded, rssMb: { ...bounded.rssMb, processor: { middle: 400, end: 451 } } });
    expect(v.problems).toEqual(['processor RSS grew by 51 MB in the second half']);
  });

  it('fails an unknown bound', () => {
    expect(judgeMemory({ ...bounded, boundPerPartition: undefined }).ok).toBe(false);
  });
});
