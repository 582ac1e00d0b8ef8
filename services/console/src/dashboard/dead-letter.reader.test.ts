import type { DeadLetterEntry, KafkaClient } from '@ingest/platform';
import { createMetricsRegistry } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { ProblemError } from '@ingest/http';
import { createDeadLetterReader } from './dead-letter.reader.js';

/** A fake scan that stays open until released, counting how many run at once. */
function heldScans() {
  let running = 0;
  let maxRunning = 0;
  let calls = 0;
  const releases: (() => void)[] = [];
  const read = async () => {
    calls += 1;
    running += 1;
    maxRunning = Math.max(maxRunning, running);
    await new Promise<void>((resolve) => releases.push(resolve));
    running -= 1;
    return [] as DeadLetterEntry[];
  };
  const releaseAll = async () => {
    while (releases.length > 0 || running > 0) {
      releases.splice(0).forEach((r) => r());
      await new Promise((r) => setImmediate(r));
    }
  };
  return { read, releaseAll, stats: () => ({ calls, maxRunning }) };
}

const base = { kafka: {} as KafkaClient, topics: { events: 'dl', crm: 'crm-dl' }, limit: 101, view: (_w: 'events' | 'crm', e: DeadLetterEntry) => e.offset };

describe('createDeadLetterReader', () => {
  it('shares one scan among concurrent requests of an account and serves the cache until it expires', async () => {
    let now = 0;
    const scans = heldScans();
    const reader = createDeadLetterReader({ ...base, metrics: createMetricsRegistry('t'), read: scans.read, now: () => now, cacheMs: 1_000 });
    const lists = Array.from({ length: 20 }, () => reader.list('events', 'acc_1'));
    await scans.releaseAll();
    await Promise.all(lists);
    expect(scans.stats().calls).toBe(1);
    await reader.list('events', 'acc_1');
    expect(scans.stats().calls).toBe(1);
    now = 1_001;
    const again = reader.list('events', 'acc_1');
    await scans.releaseAll();
    await again;
    expect(scans.stats().calls).toBe(2);
  });

  it('answers a refresh from a scan begun after it, at most one a second per account, shared by the refreshes waiting', async () => {
    let calls = 0;
    const read = async () => {
      calls += 1;
      return [] as DeadLetterEntry[];
    };
    const reader = createDeadLetterReader({ ...base, metrics: createMetricsRegistry('t'), read, cacheMs: 60_000, minScanIntervalMs: 300 });
    await reader.list('events', 'acc_1');
    expect(calls).toBe(1);
    await reader.list('events', 'acc_1');
    expect(calls).toBe(1);
    const started = performance.now();
    await Promise.all(Array.from({ length: 10 }, () => reader.list('events', 'acc_1', { fresh: true })));
    expect(calls).toBe(2);
    // It waited for the interval since the previous scan began.
    expect(performance.now() - started).toBeGreaterThanOrEqual(200);
  });

  it('runs at most two scans at once and refuses with 503 when too many wait', async () => {
    const scans = heldScans();
    const reader = createDeadLetterReader({ ...base, metrics: createMetricsRegistry('t'), read: scans.read, maxConcurrentScans: 2, maxWaitingScans: 3 });
    const accepted = Array.from({ length: 5 }, (_, i) => reader.list('events', `acc_${i}`));
    const refused = reader.list('events', 'acc_overflow');
    await expect(refused).rejects.toBeInstanceOf(ProblemError);
    await expect(refused).rejects.toMatchObject({ kind: 'unavailable' });
    await scans.releaseAll();
    await Promise.all(accepted);
    expect(scans.stats()).toEqual({ calls: 5, maxRunning: 2 });
  });
});
