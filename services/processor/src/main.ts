import {
  type Component,
  controlTopicsRead,
  createClickHouseFromConfig,
  createLagCollector,
  createReplicaWatch,
  launchService,
  replicaWatchWanted,
  tryLease,
  waitingFor,
} from '@ingest/platform';
import {
  controlPlaneConditions,
  createAllowanceReconciler,
  createControlPlane,
  createLedgerWriter,
  createSuppressionList,
  isSuspended,
  readAccounts,
  readLedgerTopic,
} from '@ingest/domain';
import { createLedgerCloser } from './ledger/ledger.closer.js';
import { createExactCountsStore } from './allowance/exact-counts.store.js';
import { createAllowanceReconcileTask } from './allowance/reconcile.task.js';
import { createProcessor, loadProcessorConfig, type ProcessorStage, waitForPipeline } from './index.js';

const config = loadProcessorConfig();
await launchService({
  service: 'processor',
  config,
  ops: { host: config.PROCESSOR_OPS_HOST, port: config.PROCESSOR_OPS_PORT },
  async build({ logger, metrics, kafka, producer, redis, topic }) {
    const ch = createClickHouseFromConfig(config);
    const stagesRun = config.PROCESSOR_STAGES.split(',') as ProcessorStage[];
    // Only the job runner needs accounts (suspension); the other stages never wait for it.
    const controlPlane = stagesRun.includes('jobs')
      ? createControlPlane({
          kafka,
          producer,
          topicPrefix: config.KAFKA_TOPIC_PREFIX,
          logger,
          metrics,
          instanceId: 'processor',
          mappingVersionsKept: 1,
          // Accounts only: what the processor's Kafka principal may read (kafka/acls.ts).
          readTopics: controlTopicsRead('processor'),
          staleAfterMs: config.CONTROL_PLANE_STALE_AFTER_MS,
          deadAfterMs: config.CONTROL_PLANE_DEAD_AFTER_MS,
        })
      : undefined;
    // Storage drops the events of erased people and companies (docs/erasure.md).
    const erasures = stagesRun.includes('storage') ? createSuppressionList({ kafka, topic: topic('erasures'), logger }) : undefined;
    const parts = createProcessor({
      stages: stagesRun,
      ...(erasures ? { erasures } : {}),
      ...(controlPlane
        ? {
            accountSuspended: (accountId: string) => {
              const account = controlPlane.accountById(accountId);
              return account !== undefined && isSuspended(account);
            },
          }
        : {}),
      kafka,
      producer,
      ch,
      redis,
      logger,
      metrics,
      topicPrefix: config.KAFKA_TOPIC_PREFIX,
      redisKeyPrefix: config.REDIS_KEY_PREFIX,
      partitionsConsumedConcurrently: config.PROCESSOR_PARTITIONS_CONCURRENCY,
      groups: {
        jobs: config.PROCESSOR_JOBS_GROUP,
        storage: config.PROCESSOR_STORAGE_GROUP,
        ledger: config.PROCESSOR_LEDGER_GROUP,
        audit: config.PROCESSOR_AUDIT_GROUP,
        dedupe: config.PROCESSOR_DEDUPE_GROUP,
      },
      dedupe: { windowMs: config.DEDUPE_WINDOW_MS, maxMarksPerPartition: config.DEDUPE_MAX_MARKS_PER_PARTITION },
      jobs: {
        sealTimeoutMs: config.PROCESSOR_JOB_SEAL_TIMEOUT_MS,
        bufferMaxBytes: config.PROCESSOR_JOB_BUFFER_MAX_BYTES,
        bufferMaxBytesPerPartition: config.PROCESSOR_JOB_BUFFER_MAX_BYTES_PER_PARTITION,
        maxFutureSkewMs: config.MAX_FUTURE_SKEW_MS,
      },
      storage: {
        concurrency: config.STORAGE_CONCURRENCY,
        batchMaxRows: config.STORAGE_BATCH_MAX_ROWS,
        batchMaxWaitMs: config.STORAGE_BATCH_MAX_WAIT_MS,
        minInsertIntervalMs: config.STORAGE_MIN_INSERT_INTERVAL_MS,
      },
    });
    // Pipeline order: what the reconciler waits for before it trusts ClickHouse's counts.
    // (Jobs are not a stage: a job's reservation stays pending until the job has run.)
    const stages = [
      { groupId: config.PROCESSOR_DEDUPE_GROUP, topic: topic('eventsRaw') },
      { groupId: config.PROCESSOR_STORAGE_GROUP, topic: topic('eventsUnique') },
    ];
    const pipelineCaughtUp = () => waitForPipeline(kafka, stages, { timeoutMs: 30_000 });
    const observers: Component[] = [{ groupId: config.PROCESSOR_JOBS_GROUP, topic: topic('jobChunks') }, ...stages].map(({ groupId, topic: t }) =>
      createLagCollector({ kafka, groupId, topics: [t], registry: metrics, logger }),
    );
    if (config.USAGE_RECONCILE_INTERVAL_MS > 0) {
      observers.push(
        createAllowanceReconcileTask({
          counts: createExactCountsStore(ch),
          allowance: createAllowanceReconciler(redis, config.REDIS_KEY_PREFIX),
          pipelineCaughtUp,
          logger,
          metrics,
          intervalMs: config.USAGE_RECONCILE_INTERVAL_MS,
        }),
      );
    }
    if (config.BILLING_CLOSE_INTERVAL_MS > 0) {
      const ledgerTopic = topic('billingLedger');
      observers.push(
        createLedgerCloser({
          counts: createExactCountsStore(ch),
          allowance: createAllowanceReconciler(redis, config.REDIS_KEY_PREFIX),
          readAccounts: () => readAccounts(kafka, topic('controlAccounts'), logger),
          readLedger: () => readLedgerTopic(kafka, ledgerTopic, logger),
          ledger: createLedgerWriter(producer, ledgerTopic),
          pipelineCaughtUp,
          lease: (periodId) => tryLease(redis, `${config.REDIS_KEY_PREFIX}billing:close:${periodId}`, 10 * 60_000),
          logger,
          intervalMs: config.BILLING_CLOSE_INTERVAL_MS,
          closeDelayMs: config.BILLING_CLOSE_DELAY_MS,
        }),
      );
    }
    // Several replicas in CLICKHOUSE_URL: the writer moves off a failing one, so their own
    // replication health is watched and shown as /readyz `degraded` (docs/scale.md).
    const replicas = replicaWatchWanted(config.CLICKHOUSE_URL)
      ? createReplicaWatch({
          url: config.CLICKHOUSE_URL,
          username: config.CLICKHOUSE_USER,
          password: config.CLICKHOUSE_PASSWORD,
          database: config.CLICKHOUSE_DATABASE,
          registry: metrics,
          logger,
        })
      : undefined;
    if (replicas) observers.push(replicas);
    return {
      // The control plane starts first: the job runner must know suspended accounts before its first job.
      components: [...(controlPlane ? [controlPlane] : []), ...(erasures ? [erasures] : []), ...parts, ...observers],
      waitingFor: () => waitingFor(controlPlane ? controlPlaneConditions(controlPlane) : {}, [...(erasures ? [erasures] : []), ...parts]),
      ...(replicas ? { degraded: () => replicas.degraded() } : {}),
      clients: [ch],
    };
  },
});
