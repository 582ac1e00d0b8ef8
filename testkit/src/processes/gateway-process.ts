/** The gateway as a real OS process, for chaos tests that must see its HTTP API, health, RSS and exit. */
import { integrationEnv } from '../env.js';
import { freePort } from '../ports.js';
import { type ServiceProcess, type ServiceProcessOptions, startServiceProcess } from './service-process.js';

export interface GatewayProcess extends ServiceProcess {
  /** Its public API. */
  readonly url: string;
}

/** `env` adds to (or overrides) what every gateway of a test needs: servers, topics, database; `options`: which build and checkout, how long it may take to be ready. */
export async function startGatewayProcess(
  name: string,
  env: Record<string, string>,
  options: Pick<ServiceProcessOptions, 'entry' | 'root' | 'readyTimeoutMs'> = {},
): Promise<GatewayProcess> {
  const servers = integrationEnv();
  const [port, opsPort] = [await freePort(), await freePort()];
  const proc = await startServiceProcess({
    service: 'gateway',
    name,
    opsPort,
    killWithParent: true,
    ...options,
    env: {
      KAFKA_BROKERS: servers.kafkaBrokers,
      KAFKA_DRIVER: servers.kafkaDriver,
      CLICKHOUSE_URL: servers.clickhouseUrl,
      // The read-only user npm start, compose and the manifests give the gateway.
      CLICKHOUSE_USER: servers.clickhouseReader.user,
      CLICKHOUSE_PASSWORD: servers.clickhouseReader.password,
      REDIS_URL: servers.redisUrl,
      KAFKA_CLIENT_ID: `chaos-${name}`,
      GATEWAY_HOST: '127.0.0.1',
      GATEWAY_PORT: String(port),
      GATEWAY_OPS_HOST: '127.0.0.1',
      GATEWAY_OPS_PORT: String(opsPort),
      ...env,
    },
  });
  return {
    ...proc,
    url: `http://127.0.0.1:${port}`,
  };
}
