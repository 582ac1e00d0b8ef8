/**
 * What a test of gateways behind a load balancer needs around them: fresh topics under a prefix
 * of its own, a migrated ClickHouse database, a Redis key prefix of its own (the per-address and
 * per-account counters, the allowance), a control plane holding the test's accounts, and the
 * three gateways behind HAProxy (haproxy-process.ts). The accounts are made before the gateways
 * start, so every gateway knows every key when HAProxy puts it in rotation (no request is spent,
 * and counted, waiting for a key to spread).
 */
import type { Account, ControlPlane, Plan } from '@ingest/domain';
import { type Redis, type TopicKey, TOPICS } from '@ingest/platform';
import { startControlPlaneClients } from '../control-plane-clients.js';
import { createTestClickHouse, createTestKafka, type TestClickHouse, type TestKafka, uniqueSuffix } from '../fixtures.js';
import { type LoadBalancedGateways, startLoadBalancedGateways } from './haproxy-process.js';

export interface LoadBalancedStack<Name extends string> {
  kafka: TestKafka;
  clickhouse: TestClickHouse;
  /** The test's own connection, on the same Redis as the gateways. */
  redis: Redis;
  /** Every gateway's REDIS_KEY_PREFIX. */
  redisKeyPrefix: string;
  controlPlane: ControlPlane;
  accounts: Record<Name, { account: Account; apiKey: string }>;
  lb: LoadBalancedGateways;
  /** How long the start took: topics, database and accounts; then the gateways, HAProxy and `alongside`. */
  startMs: { stores: number; gateways: number };
  /** Stops HAProxy and the gateways, then deletes the topics and the database. */
  close(): Promise<void>;
}

export async function startLoadBalancedStack<Name extends string>(options: {
  label: string;
  /** The accounts to create, by name, with their plans. */
  accounts: Record<Name, Plan>;
  /** Further gateway settings (limits...). */
  gatewayEnv?: Record<string, string>;
  /** Started at the same time as the gateways, on the same stores (e.g. processors); its cleanup is the caller's. */
  alongside?: (stores: { kafka: TestKafka; clickhouse: TestClickHouse; redisKeyPrefix: string }) => Promise<unknown>;
}): Promise<LoadBalancedStack<Name>> {
  const closers: (() => Promise<unknown>)[] = [];
  const close = async () => {
    for (const c of closers.splice(0).reverse()) await c().catch(() => {});
  };
  const t0 = performance.now();
  try {
    const [kafka, clickhouse] = await Promise.all([createTestKafka(Object.keys(TOPICS) as TopicKey[]), createTestClickHouse()]);
    closers.push(
      () => kafka.cleanup(),
      () => clickhouse.cleanup(),
    );
    const { redis, controlPlane, close: closeClients } = await startControlPlaneClients(kafka);
    closers.push(closeClients);
    const accounts = {} as Record<Name, { account: Account; apiKey: string }>;
    for (const [name, plan] of Object.entries(options.accounts) as [Name, Plan][]) {
      const account = await controlPlane.createAccount({ name: `${options.label} ${name}`, plan });
      const { plaintext } = await controlPlane.createApiKey(account.id, 'load balancer test');
      accounts[name] = { account, apiKey: plaintext };
    }
    const redisKeyPrefix = `t${uniqueSuffix()}:`;
    const t1 = performance.now();
    const starting = startLoadBalancedGateways({
      label: options.label,
      env: {
        KAFKA_TOPIC_PREFIX: kafka.prefix,
        CLICKHOUSE_DATABASE: clickhouse.database,
        REDIS_KEY_PREFIX: redisKeyPrefix,
        ...options.gatewayEnv,
      },
    });
    const [lb] = await Promise.all([
      starting.then((started) => {
        closers.push(() => started.stop());
        return started;
      }),
      options.alongside?.({ kafka, clickhouse, redisKeyPrefix }),
    ]);
    const startMs = { stores: Math.round(t1 - t0), gateways: Math.round(performance.now() - t1) };
    return { kafka, clickhouse, redis, redisKeyPrefix, controlPlane, accounts, lb, startMs, close };
  } catch (err) {
    await close();
    throw err;
  }
}
