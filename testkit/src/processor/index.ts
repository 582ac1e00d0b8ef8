export * from './in-process-processor.js';
export * from './jobs.fixture.js';
export * from './load.js';
export * from './pipeline-checks.js';
