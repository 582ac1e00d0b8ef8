import { describe, expect, it } from 'vitest';
import { createMetricsRegistry } from './metrics.js';

describe('ingest_build_info', () => {
  it('says which release a process runs: `source` when run from the sources (bundles get theirs from the build)', async () => {
    expect(await createMetricsRegistry('gateway').metrics()).toMatch(/^ingest_build_info\{version="source",service="gateway"\} 1$/m);
  });
});
