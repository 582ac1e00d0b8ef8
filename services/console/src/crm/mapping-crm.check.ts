import type { CrmMapping, CrmPropertyList } from '@ingest/schemas';
import { type ControlPlane, type PropertyCatalog, checkMappingAgainstProperties, objectsToCheck } from '@ingest/domain';
import { type FieldError, ProblemError } from '@ingest/http';
import { LRUCache } from 'lru-cache';
import type { ConnectionChannel } from './connection-channel.client.js';

/**
 * Checks a mapping against the CRM it names before it is saved (docs/crm-mapping.md, "Checked
 * against the CRM"): the property lists come over the connection channel (crm-sink asks the CRM
 * through its outbound policy), cached per credential version so an owner editing a mapping does
 * not spend the CRM's API budget on every save. The cache is bounded by bytes and entries
 * (docs/limits.md); the key holds the credential's updatedAt, so a rotated secret reads afresh.
 */
export interface MappingCrmCheck {
  /**
   * Resolves when the mapping fits its CRM (or needs no check: webhook). Throws a 400 problem
   * naming each field, 400 when the credential is not stored, and the channel's problem (503,
   * 502, 429, 404) when the CRM cannot be asked, its detail saying the mapping was not checked.
   */
  check(accountId: string, mapping: CrmMapping): Promise<void>;
}

export interface MappingCrmCheckOptions {
  channel: ConnectionChannel;
  controlPlane: Pick<ControlPlane, 'crmCredential'>;
  /** Default 60 s: long enough for an editing session, short enough that a new CRM field shows soon. */
  ttlMs?: number;
  /** Default 8 MiB of property lists (as JSON), and 200 lists. */
  maxBytes?: number;
  maxEntries?: number;
}

export const MAPPING_CHECK_CACHE = { ttlMs: 60_000, maxBytes: 8 * 1024 * 1024, maxEntries: 200 } as const;

export function createMappingCrmCheck(options: MappingCrmCheckOptions): MappingCrmCheck & { cachedLists(): number } {
  const cache = new LRUCache<string, CrmPropertyList>({
    max: options.maxEntries ?? MAPPING_CHECK_CACHE.maxEntries,
    maxSize: options.maxBytes ?? MAPPING_CHECK_CACHE.maxBytes,
    // A list is bounded in crm-sink (PROPERTY_LIST_BOUNDS); its JSON length is a fair measure of its memory.
    sizeCalculation: (list) => Math.max(1, JSON.stringify(list).length),
    ttl: options.ttlMs ?? MAPPING_CHECK_CACHE.ttlMs,
  });

  async function propertyList(accountId: string, name: string, updatedAt: string, object: 'contact' | 'company'): Promise<CrmPropertyList> {
    const key = `${accountId}\u0000${name}\u0000${updatedAt}\u0000${object}`;
    const cached = cache.get(key);
    if (cached) return cached;
    const list = await options.channel.properties({ accountId, name, object, updatedAt });
    cache.set(key, list);
    return list;
  }

  return {
    cachedLists: () => cache.size,
    async check(accountId, mapping) {
      const objects = objectsToCheck(mapping);
      if (objects.length === 0) return;
      const ref = mapping.crm.credentialsRef;
      const stored = options.controlPlane.crmCredential(accountId, ref);
      if (!stored) throw invalid([{ field: '/crm/credentialsRef', code: 'unknown_credential', message: `no CRM connection named "${ref}" is stored` }]);
      if (stored.credential.type !== mapping.crm.type) {
        throw invalid([
          {
            field: '/crm/type',
            code: 'credential_mismatch',
            message: `the connection "${ref}" is a ${stored.credential.type} connection, not ${mapping.crm.type}`,
          },
        ]);
      }
      let catalog: PropertyCatalog;
      try {
        const lists = await Promise.all(objects.map((object) => propertyList(accountId, ref, stored.updatedAt, object)));
        catalog = Object.fromEntries(objects.map((object, i) => [object, lists[i]]));
      } catch (err) {
        if (!(err instanceof ProblemError)) throw err;
        throw new ProblemError(err.kind, `The mapping was not checked against the CRM, so it was not saved: ${err.detail}`.slice(0, 700), {
          headers: err.headers,
          cause: err,
        });
      }
      const errors = checkMappingAgainstProperties(mapping, catalog);
      if (errors.length > 0) throw invalid(errors);
    },
  };
}

function invalid(errors: FieldError[]): ProblemError {
  const first = errors[0]?.message ?? '';
  return new ProblemError('validation', `The mapping does not fit the CRM: ${first}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ''}.`, {
    errors,
  });
}
