/**
 * The processor's public entry: what it takes to embed the stream processor. Its settings (the
 * config schema and loader), the builder of its stages (createProcessor) and the check that
 * everything written so far has passed them (waitForPipeline, which main.ts gives the usage
 * reconciler and the ledger closer); main.ts imports them from here too, so this surface is the
 * service's own and never a test's back door. The test kit starts the processor in process and
 * waits for it to drain through it. Nothing else of src/ is public.
 */
export { loadProcessorConfig, type ProcessorConfig, ProcessorConfigSchema } from './config.js';
export { type PipelineStage, waitForPipeline } from './pipeline-progress.js';
export { createProcessor, PROCESSOR_STAGES, type ProcessorDeps, type ProcessorStage } from './processor.js';
export { createExactCountsStore } from './allowance/exact-counts.store.js';
export { createClickHouseWriter } from './storage/clickhouse.writer.js';
