/** The processor as real OS processes of one test: its topics, database and consumer groups. */
import { METRIC_NAMES } from '@ingest/platform';
import { integrationEnv } from '../env.js';
import { sumByLabel } from '../metrics-text.js';
import { freePort } from '../ports.js';
import { uniqueSuffix } from '../fixtures.js';
import { ServiceFleet, type ServiceProcess, type ServiceProcessOptions, startServiceProcess } from './service-process.js';

export type ProcessorProcess = ServiceProcess;

/** What every processor of one test shares: topics, database and consumer groups. */
export interface ProcessorSetup {
  topicPrefix: string;
  database: string;
  /** Every consumer group of the processes: per test, so tests (and drivers) never share a group. */
  groups: { storage: string; dedupe: string; jobs: string; ledger: string };
  /** Log files are named `chaos-<label>-<n>.log`. */
  label: string;
  /** Further settings of every process (session timeout, liveness bounds, stages, buffer caps, ...). */
  env?: Record<string, string>;
  /** Which build and checkout the processes run (default: this checkout's sources). */
  run?: Pick<ServiceProcessOptions, 'entry' | 'root'>;
}

export function processorSetup(topicPrefix: string, database: string, label: string, env: Record<string, string> = {}): ProcessorSetup {
  const suffix = uniqueSuffix();
  return {
    topicPrefix,
    database,
    label,
    env,
    groups: { storage: `storage-${suffix}`, dedupe: `dedupe-${suffix}`, jobs: `jobs-${suffix}`, ledger: `ledger-${suffix}` },
  };
}

/** Starts processors of one setup, remembers them, and kills whatever is still running at the end of a test. */
export class ProcessorFleet extends ServiceFleet {
  constructor(setup: ProcessorSetup) {
    super((name, track) => startProcessor(setup, name, track), setup.label);
  }
}

async function startProcessor(setup: ProcessorSetup, name: string, track: (p: ServiceProcess) => void): Promise<ServiceProcess> {
  const servers = integrationEnv();
  const opsPort = await freePort();
  return startServiceProcess({
    service: 'processor',
    name,
    opsPort,
    track,
    ...setup.run,
    env: {
      KAFKA_BROKERS: servers.kafkaBrokers,
      KAFKA_DRIVER: servers.kafkaDriver,
      CLICKHOUSE_URL: servers.clickhouseUrl,
      REDIS_URL: servers.redisUrl,
      KAFKA_TOPIC_PREFIX: setup.topicPrefix,
      KAFKA_CLIENT_ID: `chaos-${name}`,
      CLICKHOUSE_DATABASE: setup.database,
      // Empty on purpose: the gateway fixture's job status store and allowance use no prefix,
      // and GET /v1/jobs must see what the job runner writes. Keys are per job and account id,
      // both unique, and the usage reconciler (the one part that scans keys) is off.
      REDIS_KEY_PREFIX: '',
      PROCESSOR_STORAGE_GROUP: setup.groups.storage,
      PROCESSOR_DEDUPE_GROUP: setup.groups.dedupe,
      PROCESSOR_JOBS_GROUP: setup.groups.jobs,
      // The copiers' groups too: a shared default group would make parallel tests rebalance each other.
      PROCESSOR_LEDGER_GROUP: setup.groups.ledger,
      PROCESSOR_AUDIT_GROUP: `processor-audit-${setup.groups.storage}`,
      PROCESSOR_OPS_HOST: '127.0.0.1',
      PROCESSOR_OPS_PORT: String(opsPort),
      USAGE_RECONCILE_INTERVAL_MS: '0',
      ...setup.env,
    },
  });
}

/** Consumer lag per group from a processor's /metrics; a group without samples is absent. */
export function lagByGroup(text: string): Map<string, number> {
  return sumByLabel(text, METRIC_NAMES.consumerLag, 'group');
}
