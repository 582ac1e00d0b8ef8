import { AppError, type Redis } from '@ingest/platform';
import { type ContactCompanyLink, createRecordStateReader, pendingLinkMember, recordStateKeys, withoutArguments } from '@ingest/domain';

/**
 * Links waiting for their company (issue 25): a contact whose event named a domain the CRM has
 * no company for yet. When the sink writes that company later, even from an event that names no
 * person, it takes the waiting contacts and links them. One Redis set per (account, domain)
 * (key and member format in @ingest/domain: recordStateKeys().pendingLinks, pendingLinkMember,
 * which the dry-run reads too), at most MAX_PENDING_LINKS_PER_COMPANY members, expiring with the
 * ledger TTL after the last addition.
 */
export const MAX_PENDING_LINKS_PER_COMPANY = 1_000;

export interface PendingLinksStore {
  /** Remembers the links; a company's set that is full takes no more (its contacts link at their next event naming both). */
  add(accountId: string, links: readonly ContactCompanyLink[]): Promise<void>;
  /** The links waiting for these companies. */
  waiting(accountId: string, domains: readonly string[]): Promise<ContactCompanyLink[]>;
  /** Forgets these links (made, or refused for good). */
  remove(accountId: string, links: readonly ContactCompanyLink[]): Promise<void>;
}

// KEYS[1]: the company's set. ARGV: cap, ttl s, members. Adds while under the cap; refreshes the TTL.
const ADD = `
for i = 3, #ARGV do
  if redis.call('SCARD', KEYS[1]) >= tonumber(ARGV[1]) then break end
  redis.call('SADD', KEYS[1], ARGV[i])
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return redis.call('SCARD', KEYS[1])
`;

export function createPendingLinksStore(options: { redis: Redis; keyPrefix?: string; ttlSeconds: number; maxPerCompany?: number }): PendingLinksStore {
  const { redis } = options;
  const cap = options.maxPerCompany ?? MAX_PENDING_LINKS_PER_COMPANY;
  const keys = recordStateKeys(options.keyPrefix);
  const reader = createRecordStateReader({ redis, ...(options.keyPrefix === undefined ? {} : { keyPrefix: options.keyPrefix }) });
  const byDomain = (links: readonly ContactCompanyLink[]) => {
    const grouped = new Map<string, string[]>();
    for (const l of links) grouped.set(l.domain, [...(grouped.get(l.domain) ?? []), pendingLinkMember(l.email)]);
    return grouped;
  };

  async function run(pipeline: ReturnType<Redis['pipeline']>, what: string): Promise<void> {
    const results = (await withoutArguments(pipeline.exec())) ?? [];
    const failed = results.find(([err]) => err !== null);
    if (failed) throw new AppError('crm_state_unavailable', `${what} failed: ${failed[0]?.message ?? 'unknown'}`, { retryable: true });
  }

  return {
    async add(accountId, links) {
      if (links.length === 0) return;
      const pipeline = redis.pipeline();
      for (const [domain, members] of byDomain(links)) pipeline.eval(ADD, 1, keys.pendingLinks(accountId, domain), cap, options.ttlSeconds, ...members);
      await run(pipeline, 'remembering links waiting for their company');
    },
    waiting: (accountId, domains) => (reader.waitingLinks as NonNullable<typeof reader.waitingLinks>)(accountId, domains),
    async remove(accountId, links) {
      if (links.length === 0) return;
      const pipeline = redis.pipeline();
      for (const [domain, members] of byDomain(links)) pipeline.srem(keys.pendingLinks(accountId, domain), ...members);
      await run(pipeline, 'forgetting links');
    },
  };
}
