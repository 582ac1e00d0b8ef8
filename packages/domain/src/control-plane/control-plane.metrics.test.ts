import { describe, expect, it } from 'vitest';
import { createMetricsRegistry } from '@ingest/platform';
import { sampleValue } from '@ingest/testkit';
import { type ControlPlaneKind, registerControlPlaneMetrics } from './control-plane.metrics.js';

describe('control plane metrics', () => {
  it('read the records per kind and the last applied time at each scrape', async () => {
    const registry = createMetricsRegistry('gateway');
    const records: Record<ControlPlaneKind, number> = { accounts: 0, api_keys: 0, mappings: 0, crm_credentials: 0, owners: 0, admin_credentials: 0 };
    let last: number | undefined = undefined;
    registerControlPlaneMetrics(registry, { records: () => records, lastAppliedMs: () => last });

    let text = await registry.metrics();
    expect(sampleValue(text, 'ingest_control_plane_records', { kind: 'api_keys' })).toBe(0);
    expect(sampleValue(text, 'ingest_control_plane_last_applied_timestamp_seconds')).toBe(0);

    records.accounts = 3;
    records.api_keys = 5;
    last = 1_764_000_000_500;
    text = await registry.metrics();
    expect(sampleValue(text, 'ingest_control_plane_records', { kind: 'accounts' })).toBe(3);
    expect(sampleValue(text, 'ingest_control_plane_records', { kind: 'api_keys' })).toBe(5);
    expect(sampleValue(text, 'ingest_control_plane_records', { kind: 'owners' })).toBe(0);
    expect(sampleValue(text, 'ingest_control_plane_last_applied_timestamp_seconds')).toBe(1_764_000_000.5);
  });
});
