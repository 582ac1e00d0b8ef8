/**
 * Real servers: the stack's three-node Kafka cluster (each node restarted in turn by this test),
 * the shared ClickHouse and Redis; the gateway, a processor and a crm-sink as real OS processes;
 * a fake HubSpot over real HTTP. Topics with replication 3 and min.insync.replicas 2.
 *
 * A rolling restart as an operator (or a StatefulSet upgrade) does it, under steady load from a
 * keep-alive HTTP client: each node gets SIGTERM (a controlled shutdown: its partition
 * leaderships move first), is started again with `stack.sh up`, and the next one goes only once
 * no partition is under-replicated. Then every event answered 202 is in ClickHouse exactly once
 * and synced to the CRM, no 503 was stored, 503s stayed under 5% of the requests, and no service
 * process exited.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { startClusterNodes, stopClusterNode, underReplicatedPartitions, waitFor } from '@ingest/testkit';
import { type ClusterPipeline, expectDeliveredOnce, startClusterPipeline, startLoad, unavailability } from './cluster-pipeline.fixture.js';

let pipeline: ClusterPipeline | undefined;

afterAll(async () => {
  if (pipeline) await startClusterNodes(pipeline.nodes);
  await pipeline?.close();
});

describe('a rolling restart of all three Kafka brokers under load', () => {
  it('loses nothing answered 202 and stores nothing twice', async () => {
    const started = Date.now();
    const note = (what: string) => console.log(`rolling-restart ${((Date.now() - started) / 1000).toFixed(1)} s: ${what}`);
    pipeline = await startClusterPipeline('rolling');
    const p = pipeline;
    const load = startLoad(p, { perSecond: 20, eventsPerRequest: 10 });
    await waitFor(() => load.count(202) >= 1_000, { description: 'load flowing (1,000 events accepted)', timeoutMs: 60_000 });

    for (const node of p.nodes) {
      await stopClusterNode(node, 'SIGTERM');
      note(`node ${node.id} stopped (SIGTERM); ${load.count(202)} events accepted so far`);
      await startClusterNodes(p.nodes);
      await waitFor(
        async () => {
          const lagging = await underReplicatedPartitions(p.nodes, p.kafka.prefix);
          if (lagging.length > 0) throw new Error(`${lagging.length} under-replicated, e.g. ${lagging[0]}`);
          return true;
        },
        { description: `node ${node.id} caught up (no under-replicated partition of ${p.kafka.prefix}*)`, timeoutMs: 120_000, intervalMs: 1_000 },
      );
      note(`node ${node.id} back and in sync`);
    }
    const acceptedAfterRoll = load.count(202);
    await waitFor(() => load.count(202) >= acceptedAfterRoll + 1_000, { description: '1,000 more events accepted after the last restart', timeoutMs: 60_000 });
    await load.stop();

    const delivered = await expectDeliveredOnce(p, load, 120_000);
    const down = unavailability(load);
    const statuses = [...new Set(load.requests.map((r) => r.status))].sort();
    console.log(
      `rolling-restart summary: ${delivered.accepted} events accepted and stored once (${delivered.rawRows} rows before merges); ` +
        `${down.requests} requests, ${down.refused} answered 503 (${(down.share * 100).toFixed(1)}%, over ${down.spanMs} ms); answers ${statuses.join(',')}`,
    );
    expect(delivered.storedTwice).toEqual([]);
    expect(delivered.refusedButStored).toEqual([]);
    expect(delivered.foreign).toEqual([]);
    expect(statuses.filter((s) => s !== 202 && s !== 503 && s !== 504)).toEqual([]);
    expect(down.share).toBeLessThanOrEqual(0.05);
    expect([p.gateway.exitStatus(), p.processor.exitStatus(), p.sink.exitStatus()]).toEqual([undefined, undefined, undefined]);
  });
});
