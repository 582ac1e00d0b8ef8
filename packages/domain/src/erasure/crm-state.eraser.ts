import type { Redis } from '@ingest/platform';
import type { ErasureIdentifierType } from '@ingest/schemas';
import { pendingLinkEmail } from '../crm/crm-links.js';
import { recordStateKeys } from '../crm/record-state.reader.js';

/**
 * Removes an erased identity from the CRM sink's state in Redis (key formats owned by
 * record-state.reader.ts): the record state of the contact (by email) or company (by domain),
 * the pending links waiting for that company, and the erased contact's membership in the
 * pending links of any company. The per-event ledger marks (`crm:{account}:<event>:<rule>`)
 * hold event and rule ids only and expire; parked events (`crm:park:*`) are dropped by the
 * sink's suppression check when they are resumed (docs/erasure.md).
 */
export interface CrmStateEraser {
  erase(accountId: string, type: ErasureIdentifierType, value: string): Promise<{ crmRecords: number; pendingLinks: number }>;
}

/** Glob-special characters of a key part taken literally in SCAN MATCH. */
const globLiteral = (text: string) => text.replace(/[*?[\]\\]/g, '\\$&');

export function createCrmStateEraser(options: { redis: Redis; keyPrefix?: string; scanCount?: number }): CrmStateEraser {
  const { redis } = options;
  const keys = recordStateKeys(options.keyPrefix);
  const scanCount = options.scanCount ?? 500;

  /** Every pending-link set of the account (one Redis Cluster slot: the account is the hash tag). */
  async function pendingLinkSets(accountId: string): Promise<string[]> {
    const sample = keys.pendingLinks(accountId, 'x');
    const pattern = `${globLiteral(sample.slice(0, -1))}*`;
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', scanCount);
      found.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    return found;
  }

  return {
    async erase(accountId, type, value) {
      if (type === 'domain') {
        const crmRecords = await redis.del(keys.state(accountId, 'company', value));
        const pendingLinks = await redis.del(keys.pendingLinks(accountId, value));
        return { crmRecords, pendingLinks };
      }
      const crmRecords = await redis.del(keys.state(accountId, 'contact', value));
      let pendingLinks = 0;
      for (const set of await pendingLinkSets(accountId)) {
        // By the member's email, not its exact text: a newer sink may add fields to a member.
        const members = (await redis.smembers(set)).filter((m) => pendingLinkEmail(m)?.toLowerCase() === value);
        if (members.length > 0) pendingLinks += await redis.srem(set, ...members);
      }
      return { crmRecords, pendingLinks };
    },
  };
}
