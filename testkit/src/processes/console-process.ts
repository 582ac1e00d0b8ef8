/** The console (dashboard and admin API) as a real OS process, for tests that need it beside real gateways. */
import { testCredentialKeys } from '../credential-keys.js';
import { integrationEnv } from '../env.js';
import { freePort } from '../ports.js';
import { type ServiceProcess, type ServiceProcessOptions, startServiceProcess } from './service-process.js';

export interface ConsoleProcess extends ServiceProcess {
  /** Its dashboard listener (/dashboard). */
  readonly url: string;
  /** Its admin API, when `env` gave it an ADMIN_TOKEN. */
  readonly adminUrl?: string;
}

/** `env` adds to (or overrides) what every console of a test needs: servers, topics, database; `options`: which build and checkout, how long it may take to be ready. */
export async function startConsoleProcess(
  name: string,
  env: Record<string, string>,
  options: Pick<ServiceProcessOptions, 'entry' | 'root' | 'readyTimeoutMs'> = {},
): Promise<ConsoleProcess> {
  const servers = integrationEnv();
  const [port, opsPort] = [await freePort(), await freePort()];
  const adminPort = env.ADMIN_TOKEN ? (env.ADMIN_PORT ?? String(await freePort())) : undefined;
  const proc = await startServiceProcess({
    service: 'console',
    name,
    opsPort,
    killWithParent: true,
    ...options,
    env: {
      KAFKA_BROKERS: servers.kafkaBrokers,
      KAFKA_DRIVER: servers.kafkaDriver,
      CLICKHOUSE_URL: servers.clickhouseUrl,
      // The read-only user npm start, compose and the manifests give the console.
      CLICKHOUSE_USER: servers.clickhouseReader.user,
      CLICKHOUSE_PASSWORD: servers.clickhouseReader.password,
      REDIS_URL: servers.redisUrl,
      KAFKA_CLIENT_ID: `test-${name}`,
      CONSOLE_HOST: '127.0.0.1',
      CONSOLE_PORT: String(port),
      CONSOLE_OPS_HOST: '127.0.0.1',
      CONSOLE_OPS_PORT: String(opsPort),
      ...testCredentialKeys().consoleEnv,
      ...(adminPort ? { ADMIN_HOST: '127.0.0.1', ADMIN_PORT: adminPort } : {}),
      ...env,
    },
  });
  return {
    ...proc,
    url: `http://127.0.0.1:${port}`,
    ...(adminPort ? { adminUrl: `http://127.0.0.1:${adminPort}` } : {}),
  };
}
