/**
 * The replica watch's state (no servers): fake clients stand for the servers of CLICKHOUSE_URL
 * and answer as 18.16's system tables do. A full replica turns into a /readyz `degraded` line
 * and its gauge series 1, and both clear once its queue is free of failing entries.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../logger.js';
import { createMetricsRegistry, METRIC_NAMES } from '../metrics.js';
import type { ClickHouse } from './client.js';
import { type QueueFailureRow, REPLICA_CAUSES, type ReplicaTableRow } from './replica-health.js';
import { createReplicaWatch, replicaWatchWanted } from './replica-watch.js';

const NO_SPACE =
  'Code: 75, e.displayText() = DB::Exception: Cannot write to file data.bin, errno: 28, strerror: No space left on device, e.what() = DB::Exception';

interface FakeServer {
  tables: ReplicaTableRow[];
  failures: QueueFailureRow[];
  down?: Error;
  /** Resolves a query only when released (to show that checks do not overlap). */
  hold?: Promise<void>;
  queries: string[];
  closed: boolean;
}

function fakeServer(): FakeServer {
  return {
    tables: [{ table: 'events', is_readonly: 0, is_session_expired: 0, queue_size: '0', absolute_delay: '0' }],
    failures: [],
    queries: [],
    closed: false,
  };
}

function fakeClient(server: FakeServer): ClickHouse {
  const fail = () => Promise.reject(new Error('not used'));
  return {
    name: 'clickhouse',
    database: 'ingest',
    insert: fail,
    insertTabSeparated: fail,
    command: fail,
    ping: async () => true,
    async query<T>(text: string): Promise<T[]> {
      server.queries.push(text);
      await server.hold;
      if (server.down) throw server.down;
      return (text.includes('system.replication_queue') ? server.failures : server.tables) as T[];
    },
    close: async () => {
      server.closed = true;
    },
  };
}

function setup() {
  const servers: Record<string, FakeServer> = { 'http://127.0.0.1:8223': fakeServer(), 'http://u:secret@127.0.0.1:8224': fakeServer() };
  const registry = createMetricsRegistry('test');
  const watch = createReplicaWatch({
    url: Object.keys(servers).join(','),
    database: 'ingest',
    registry,
    logger: createLogger({ service: 'test', level: 'silent' }),
    connect: (url) => fakeClient(servers[url] as FakeServer),
  });
  const gauge = async () => {
    const values = (await registry.getSingleMetric(METRIC_NAMES.clickhouseReplicaUnhealthy)?.get())?.values ?? [];
    return values.filter((v) => v.value === 1).map((v) => `${String(v.labels.replica)} ${String(v.labels.cause)}`);
  };
  return { first: servers['http://127.0.0.1:8223'] as FakeServer, second: servers['http://u:secret@127.0.0.1:8224'] as FakeServer, watch, registry, gauge };
}

describe('replicaWatchWanted', () => {
  it('watches only when CLICKHOUSE_URL names several servers', () => {
    expect(replicaWatchWanted('http://127.0.0.1:8123')).toBe(false);
    expect(replicaWatchWanted('http://a:8123, http://b:8123')).toBe(true);
  });
});

describe('createReplicaWatch', () => {
  it('says nothing while every replica is healthy, with zero series for every replica and cause', async () => {
    const { watch, registry, gauge } = setup();
    expect((await watch.check()).map((v) => v.cause)).toEqual([undefined, undefined]);
    expect(watch.degraded()).toEqual([]);
    expect(await gauge()).toEqual([]);
    const series = (await registry.getSingleMetric(METRIC_NAMES.clickhouseReplicaUnhealthy)?.get())?.values ?? [];
    expect(series).toHaveLength(2 * REPLICA_CAUSES.length); // two replicas, every cause
    expect(watch.healthy()).toBe(true);
  });

  it('names a full replica in degraded and the gauge, and clears once its queue is free of failures', async () => {
    const { first, second, watch, gauge } = setup();
    second.failures = [{ table: 'events', num_tries: '12', last_exception: NO_SPACE }];
    await watch.check();
    expect(watch.degraded()).toEqual([
      'clickhouse-replica 127.0.0.1:8224: replication failing (cause: disk_full; 1 queue entries failing in events, e.g. "Code: 75, DB::Exception: Cannot write to file data.bin, errno: 28, strerror: No space left on device"; queue 0, 0 s behind)',
    ]);
    expect(await gauge()).toEqual(['127.0.0.1:8224 disk_full']);
    // Only the service's database is asked about.
    expect(first.queries.every((q) => q.includes("database = 'ingest'"))).toBe(true);
    second.failures = [];
    await watch.check();
    expect(watch.degraded()).toEqual([]);
    expect(await gauge()).toEqual([]);
  });

  it('names a replica that does not answer unreachable, without its credentials', async () => {
    const { second, watch, gauge } = setup();
    second.down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8224'), { code: 'ECONNREFUSED' });
    await watch.check();
    expect(watch.degraded()).toEqual([
      'clickhouse-replica 127.0.0.1:8224: unreachable (cause: unreachable; replica check failed: connect ECONNREFUSED 127.0.0.1:8224)',
    ]);
    expect(watch.degraded().join()).not.toContain('secret');
    expect(await gauge()).toEqual(['127.0.0.1:8224 unreachable']);
  });

  it('never runs two checks at once: a check asked for while one runs joins it', async () => {
    const { first, watch } = setup();
    let release: () => void = () => {};
    first.hold = new Promise((resolve) => (release = resolve));
    const a = watch.check();
    const b = watch.check();
    expect(b).toBe(a);
    release();
    await a;
    expect(first.queries).toHaveLength(2); // one check: system.replicas and system.replication_queue
  });

  it('stops after the running check and closes its clients', async () => {
    const { first, second, watch } = setup();
    await watch.start();
    await watch.stop();
    expect(first.closed && second.closed).toBe(true);
    expect(first.queries.length).toBeGreaterThan(0);
  });
});
