import { Counter, Histogram } from 'prom-client';
import { CRM_TYPES } from '@ingest/schemas';
import { METRIC_NAMES, type Registry } from '@ingest/platform';
import { type CrmAdapter, CrmError } from './adapter.js';

export interface CrmCallMetrics {
  calls: Counter<'adapter' | 'operation' | 'status'>;
  duration: Histogram<'adapter' | 'operation'>;
}

const OPERATIONS = ['read', 'upsert', 'activities', 'link'] as const;

export function createCrmCallMetrics(registry: Registry): CrmCallMetrics {
  const metrics: CrmCallMetrics = {
    calls: new Counter({
      name: METRIC_NAMES.crmCalls,
      help: 'CRM API calls by adapter, operation and outcome (ok or the CrmError kind)',
      labelNames: ['adapter', 'operation', 'status'],
      registers: [registry],
    }),
    duration: new Histogram({
      name: METRIC_NAMES.crmCallDuration,
      help: 'Seconds per CRM API call',
      labelNames: ['adapter', 'operation'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30],
      registers: [registry],
    }),
  };
  // Every adapter and operation starts at zero (status ok; the error kinds appear when they happen).
  for (const adapter of CRM_TYPES) {
    for (const operation of OPERATIONS) {
      metrics.calls.inc({ adapter, operation, status: 'ok' }, 0);
      metrics.duration.zero({ adapter, operation });
    }
  }
  return metrics;
}

/** Counts and times every call of an adapter; the adapter itself stays free of metrics. */
export function instrumentAdapter(adapter: CrmAdapter, metrics: CrmCallMetrics): CrmAdapter {
  async function timed<T>(operation: string, call: () => Promise<T>): Promise<T> {
    const end = metrics.duration.startTimer({ adapter: adapter.type, operation });
    try {
      const result = await call();
      metrics.calls.inc({ adapter: adapter.type, operation, status: 'ok' });
      return result;
    } catch (err) {
      metrics.calls.inc({ adapter: adapter.type, operation, status: err instanceof CrmError ? err.kind : 'error' });
      throw err;
    } finally {
      end();
    }
  }
  return {
    type: adapter.type,
    maxBatchSize: adapter.maxBatchSize,
    read: (object, keys, fields, signal) => timed('read', () => adapter.read(object, keys, fields, signal)),
    upsert: (object, records, signal) => timed('upsert', () => adapter.upsert(object, records, signal)),
    createActivities: (activities, signal) => timed('activities', () => adapter.createActivities(activities, signal)),
    ...(adapter.link ? { link: (links, signal) => timed('link', () => (adapter.link as NonNullable<CrmAdapter['link']>)(links, signal)) } : {}),
    // Keeps the wrapped adapter's connection pool closable.
    ...('close' in adapter && typeof adapter.close === 'function' ? { close: () => (adapter.close as () => Promise<void>)() } : {}),
  };
}
