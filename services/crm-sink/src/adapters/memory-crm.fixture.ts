import type { CrmMapping } from '@ingest/schemas';
import { type CrmCredential, type MappingReader, sealCredentialSecrets, splitCredential, type StoredCrmCredential, type StoredMapping } from '@ingest/domain';
import { testCredentialKeys } from '@ingest/testkit';
import { type ActivityWrite, type CrmAdapter, CrmError, type CrmErrorKind, type CrmObject, type PropertyValue, type RecordWrite } from './adapter.js';

/**
 * A CRM in memory for tests of the sink's logic (it is no Kafka, ClickHouse or Redis): records
 * by key, every activity create as received (duplicates stay visible), every call with its
 * size and time, and failures on demand. The HTTP fake CRM tests the real adapters.
 */
export interface MemoryCrmCall {
  operation: 'read' | 'upsert' | 'activities';
  size: number;
  atMs: number;
  failed?: CrmErrorKind;
}

export interface MemoryCrm {
  adapter: CrmAdapter;
  records: Map<string, Record<string, PropertyValue>>;
  activities: ActivityWrite[];
  calls: MemoryCrmCall[];
  record(object: CrmObject, key: string): Record<string, PropertyValue> | undefined;
  /** The next `times` calls fail with this kind. */
  failNext(kind: CrmErrorKind, times: number, options?: { retryAfterMs?: number; message?: string }): void;
  /** Upserts of these keys are refused per record, as HubSpot's 207 does. */
  rejectKeys: Set<string>;
}

export function createMemoryCrm(options: { maxBatchSize?: number } = {}): MemoryCrm {
  const records = new Map<string, Record<string, PropertyValue>>();
  const activities: ActivityWrite[] = [];
  const calls: MemoryCrmCall[] = [];
  const failures: { kind: CrmErrorKind; retryAfterMs?: number; message: string }[] = [];
  const rejectKeys = new Set<string>();
  const maxBatchSize = options.maxBatchSize ?? 100;
  const id = (object: CrmObject, key: string) => `${object}:${key}`;

  function enter(operation: MemoryCrmCall['operation'], size: number): void {
    if (size > maxBatchSize) throw new CrmError('permanent', `batch of ${size} is over the limit of ${maxBatchSize}`, 400);
    const failure = failures.shift();
    calls.push({ operation, size, atMs: Date.now(), ...(failure ? { failed: failure.kind } : {}) });
    if (failure) throw new CrmError(failure.kind, failure.message, undefined, failure.retryAfterMs);
  }

  const adapter: CrmAdapter = {
    type: 'hubspot',
    maxBatchSize,
    async read(object, keys, fields) {
      enter('read', keys.length);
      const out = new Map<string, Record<string, PropertyValue>>();
      for (const key of keys) {
        const rec = records.get(id(object, key));
        if (rec) out.set(key, Object.fromEntries(fields.filter((f) => f in rec).map((f) => [f, rec[f] ?? null])));
      }
      return out;
    },
    async upsert(object: CrmObject, writes: RecordWrite[]) {
      enter('upsert', writes.length);
      const refused = writes.filter((w) => rejectKeys.has(w.key)).map((w) => ({ key: w.key, message: `INVALID_EMAIL: ${w.key} is not accepted` }));
      for (const w of writes) if (!rejectKeys.has(w.key)) records.set(id(object, w.key), { ...records.get(id(object, w.key)), ...w.properties });
      return { failures: refused };
    },
    async createActivities(writes) {
      enter('activities', writes.length);
      activities.push(...writes);
      return { failures: [] };
    },
  };

  return {
    adapter,
    records,
    activities,
    calls,
    rejectKeys,
    record: (object, key) => records.get(id(object, key)),
    failNext(kind, times, opts = {}) {
      for (let i = 0; i < times; i += 1)
        failures.push({ kind, message: opts.message ?? `${kind} (test)`, ...(opts.retryAfterMs !== undefined ? { retryAfterMs: opts.retryAfterMs } : {}) });
    },
  };
}

/**
 * Mappings and credentials held in memory; an entry without `credential` names one that is not
 * stored. Credentials are sealed with the test key pair as the admin API seals them, so every
 * sink test opens them the way production does.
 */
export function createStaticMappings(entries: Record<string, { mapping: CrmMapping; credential?: CrmCredential }>): MappingReader {
  const at = new Date(0).toISOString();
  const sealed = new Map<string, StoredCrmCredential>();
  const seal = (accountId: string, name: string, credential: CrmCredential): StoredCrmCredential => {
    const { settings, secrets } = splitCredential(credential);
    const stored = { accountId, name, credential: settings, updatedAt: at };
    return { ...stored, sealed: sealCredentialSecrets(testCredentialKeys().sealer, stored, secrets) };
  };
  const stored = (accountId: string): StoredMapping | undefined => {
    const e = entries[accountId];
    return e ? { accountId, version: 1, mapping: e.mapping, createdAt: at, author: 'test' } : undefined;
  };
  return {
    currentMapping: stored,
    mappingVersions: (accountId) => {
      const m = stored(accountId);
      return m ? [m] : [];
    },
    crmCredential(accountId, name): StoredCrmCredential | undefined {
      const e = entries[accountId];
      if (!e?.credential || e.mapping.crm.credentialsRef !== name) return undefined;
      const stored = sealed.get(accountId) ?? seal(accountId, name, e.credential);
      sealed.set(accountId, stored);
      return stored;
    },
  };
}
