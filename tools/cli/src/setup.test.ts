import { describe, expect, it } from 'vitest';
import { InputError } from './frame.js';
import { runSetup } from './setup.js';

describe('ingest setup: retention settings', () => {
  it.each(['1', '99'])('refuses ROLLUPS_RETENTION_DAYS=%s before touching any server (the rollups are read back 100 days)', async (days) => {
    // Unreachable servers: the refusal must come first.
    const env = { ROLLUPS_RETENTION_DAYS: days, KAFKA_BROKERS: '127.0.0.1:1', CLICKHOUSE_URL: 'http://127.0.0.1:1' };
    await expect(runSetup({ env })).rejects.toThrow(/ROLLUPS_RETENTION_DAYS must be 0 \(forever\) or at least 100/);
  });

  it('refuses a negative EVENTS_RETENTION_DAYS by name', async () => {
    await expect(runSetup({ env: { EVENTS_RETENTION_DAYS: '-1' } })).rejects.toThrow(/EVENTS_RETENTION_DAYS/);
  });
});

describe('ingest setup: replication settings', () => {
  it('refuses KAFKA_MIN_INSYNC_REPLICAS above KAFKA_REPLICATION_FACTOR before touching any server, as wrong settings (exit code 2)', async () => {
    const env = { KAFKA_REPLICATION_FACTOR: '2', KAFKA_MIN_INSYNC_REPLICAS: '3', KAFKA_BROKERS: '127.0.0.1:1', CLICKHOUSE_URL: 'http://127.0.0.1:1' };
    const err = await runSetup({ env }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as Error).message).toMatch(/KAFKA_MIN_INSYNC_REPLICAS=3 is more than KAFKA_REPLICATION_FACTOR=2/);
  });
});
