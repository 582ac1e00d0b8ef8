/** The crm-sink as real OS processes of one run: its topics, Redis keys and consumer group. */
import { testCredentialKeys } from '../credential-keys.js';
import { integrationEnv } from '../env.js';
import { freePort } from '../ports.js';
import { ServiceFleet, type ServiceProcess, type ServiceProcessOptions, startServiceProcess } from './service-process.js';

export type SinkProcess = ServiceProcess;

/** What every sink process of one run shares: its topics, Redis keys and consumer group. */
export interface SinkSetup {
  topicPrefix: string;
  redisKeyPrefix: string;
  groupId: string;
  /** Log files are named `chaos-<label>-<n>.log`. */
  label: string;
  /** Further CRM_* variables (coalescing window, rate, retries). */
  env: Record<string, string>;
  /** Which build and checkout the processes run (default: this checkout's sources). */
  run?: Pick<ServiceProcessOptions, 'entry' | 'root'>;
}

/** Starts sink processes of one setup, remembers them, and kills whatever still runs at the end. */
export class SinkFleet extends ServiceFleet {
  constructor(setup: SinkSetup) {
    super((name, track) => startSink(setup, name, track), setup.label);
  }
}

async function startSink(setup: SinkSetup, name: string, track: (p: ServiceProcess) => void): Promise<ServiceProcess> {
  const servers = integrationEnv();
  const opsPort = await freePort();
  return startServiceProcess({
    service: 'crm-sink',
    name,
    opsPort,
    track,
    ...setup.run,
    env: {
      KAFKA_BROKERS: servers.kafkaBrokers,
      KAFKA_DRIVER: servers.kafkaDriver,
      REDIS_URL: servers.redisUrl,
      KAFKA_TOPIC_PREFIX: setup.topicPrefix,
      KAFKA_CLIENT_ID: `chaos-${name}`,
      REDIS_KEY_PREFIX: setup.redisKeyPrefix,
      CRM_SINK_GROUP: setup.groupId,
      CRM_SINK_OPS_HOST: '127.0.0.1',
      CRM_SINK_OPS_PORT: String(opsPort),
      // The fake CRM is plain http on loopback, which the outbound address policy refuses by default.
      CRM_ALLOW_HTTP: 'true',
      CRM_ALLOWED_CIDRS: '127.0.0.1/32',
      ...testCredentialKeys().sinkEnv,
      ...setup.env,
    },
  });
}
