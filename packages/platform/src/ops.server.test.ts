/**
 * The ops endpoints: /healthz follows liveness (a part that stopped for good makes it 503, so
 * an orchestrator restarts the process), /readyz follows readiness. A local listener only.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { createMetricsRegistry } from './metrics.js';
import type { Component } from './lifecycle.js';
import { createOpsServer, type OpsServer, waitingFor } from './ops.server.js';

let server: OpsServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function get(path: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${server?.address()}${path}`);
  return { status: res.status, body: await res.json() };
}

describe('ops server', () => {
  it('answers /healthz 503 "dead" while a part is dead, and /readyz by readiness alone, naming what it waits for', async () => {
    let alive = true;
    let caughtUp = false;
    let consumerHealthy = false;
    const consumer = { name: 'dedupe-consumer', healthy: () => consumerHealthy } as Component;
    const other = { name: 'storage-consumer', healthy: () => true } as Component;
    server = createOpsServer({
      host: '127.0.0.1',
      port: 0,
      metrics: createMetricsRegistry('ops-test'),
      waitingFor: () => waitingFor({ 'control plane caught up': () => caughtUp }, [consumer, other]),
      live: () => alive,
      logger: createLogger({ service: 'test', level: 'silent' }),
    });
    await server.start();
    expect(await get('/healthz')).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await get('/readyz')).toEqual({ status: 503, body: { status: 'not_ready', waitingFor: ['control plane caught up', 'dedupe-consumer'] } });
    caughtUp = true;
    expect(await get('/readyz')).toEqual({ status: 503, body: { status: 'not_ready', waitingFor: ['dedupe-consumer'] } });
    consumerHealthy = true;
    expect(await get('/readyz')).toEqual({ status: 200, body: { status: 'ready' } });
    alive = false;
    expect(await get('/healthz')).toEqual({ status: 503, body: { status: 'dead' } });
  });

  it('stays 200 while something is degraded, listing it beside what it waits for', async () => {
    let waiting: string[] = [];
    let degraded: string[] = [];
    server = createOpsServer({
      host: '127.0.0.1',
      port: 0,
      metrics: createMetricsRegistry('ops-test'),
      waitingFor: () => waiting,
      degraded: () => degraded,
      logger: createLogger({ service: 'test', level: 'silent' }),
    });
    await server.start();
    expect(await get('/readyz')).toEqual({ status: 200, body: { status: 'ready' } });
    degraded = ['kafka-brokers: 2 of 3 live (missing broker 2; at least KAFKA_MIN_INSYNC_REPLICAS=2: writes go on)'];
    expect(await get('/readyz')).toEqual({ status: 200, body: { status: 'ready', degraded } });
    waiting = ['kafka-producer'];
    expect(await get('/readyz')).toEqual({ status: 503, body: { status: 'not_ready', waitingFor: ['kafka-producer'], degraded } });
  });
});
