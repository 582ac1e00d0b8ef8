import { describe, expect, it } from 'vitest';
import { allTopicSpecs, TOPICS, topicName } from './topics.js';

describe('topics', () => {
  it('applies the prefix', () => {
    expect(topicName('', 'eventsRaw')).toBe('events.raw');
    expect(topicName('staging.', 'deadLetters')).toBe('staging.events.deadletter');
  });

  it('co-partitions the dedupe changelog with events.raw', () => {
    expect(TOPICS.dedupeChangelog.partitions).toBe(TOPICS.eventsRaw.partitions);
  });

  it('keeps state topics compacted and event topics time-bounded', () => {
    for (const spec of allTopicSpecs()) {
      const policy = spec.config['cleanup.policy'];
      const state =
        spec.name.startsWith('control.') ||
        spec.name === TOPICS.jobProgress.name ||
        spec.name === TOPICS.billingLedger.name ||
        spec.name === TOPICS.identities.name;
      if (state) expect(policy).toBe('compact');
      else expect(Number((spec.config as Record<string, string>)['retention.ms'])).toBeGreaterThan(0);
    }
    expect(new Set(allTopicSpecs().map((s) => s.name)).size).toBe(allTopicSpecs().length);
  });

  it('never compacts the audit log, and keeps it for at least a year', () => {
    expect(TOPICS.auditLog.config['cleanup.policy']).toBe('delete');
    expect(Number(TOPICS.auditLog.config['retention.ms'])).toBeGreaterThanOrEqual(365 * 24 * 3600 * 1000);
  });
});
