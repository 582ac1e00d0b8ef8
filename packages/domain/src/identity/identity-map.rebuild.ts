import { type KafkaClient, type Logger, type OutgoingMessage, readTopicToEnd } from '@ingest/platform';
import type { IdentityMapIndex } from './identity-map.store.js';
import { decodeIdentityEntry, encodeIdentityEntry, type IdentityEntry, identityMapKey, parseIdentityMapKey, type PersonRef } from './identity-record.js';

/** The topic records of map writes; `null` entries are tombstones (erasure). */
export function identityTopicMessages(accountId: string, entries: readonly (readonly [PersonRef, IdentityEntry | null])[]): OutgoingMessage[] {
  return entries.map(([ref, entry]) => ({
    key: identityMapKey(accountId, ref),
    // A null value is a tombstone: compaction then removes the key for good.
    value: entry === null ? (null as unknown as string) : encodeIdentityEntry(entry),
  }));
}

export interface IdentityMapBuilder {
  /**
   * Resolves once the index holds the topic: at once while the marker is there (looked at most
   * every `checkEveryMs`), after a rebuild when it is gone (Redis lost its data).
   */
  ensureBuilt(): Promise<void>;
}

/**
 * Rebuilds the Redis index from the compacted topic, read from its beginning to the end it has
 * when the rebuild starts, writing in pages of `pageSize` (bounded memory). Rule: whoever finds
 * the marker missing rebuilds; two rebuilding at once write the same entries, and the index
 * keeps the newest of each, so a write made during the rebuild is not undone.
 */
export function createIdentityMapBuilder(deps: {
  kafka: KafkaClient;
  topic: string;
  index: IdentityMapIndex;
  logger: Logger;
  checkEveryMs?: number;
  pageSize?: number;
  onRebuilt?: (records: number) => void;
}): IdentityMapBuilder {
  const checkEveryMs = deps.checkEveryMs ?? 5_000;
  const pageSize = deps.pageSize ?? 500;
  let checkedAt = -Infinity;
  let running: Promise<void> | undefined;

  async function rebuild(): Promise<void> {
    const started = Date.now();
    let page: { accountId: string; ref: PersonRef; entry: IdentityEntry | undefined }[] = [];
    const flush = async () => {
      const current = page;
      page = [];
      const byAccount = new Map<string, typeof current>();
      for (const item of current) byAccount.set(item.accountId, [...(byAccount.get(item.accountId) ?? []), item]);
      for (const [accountId, items] of byAccount) {
        // In topic order: the last record of a key wins, a tombstone removes it.
        for (const item of items) {
          if (item.entry) await deps.index.put(accountId, [[item.ref, item.entry]]);
          else await deps.index.remove(accountId, [item.ref]);
        }
      }
    };
    const records = await readTopicToEnd(deps.kafka, {
      topic: deps.topic,
      logger: deps.logger,
      onMessage: (m) => {
        const key = m.key === null ? undefined : parseIdentityMapKey(m.key.toString('utf8'));
        if (!key) return undefined;
        page.push({ ...key, entry: m.value?.length ? decodeIdentityEntry(m.value) : undefined });
        return page.length >= pageSize ? flush() : undefined;
      },
    });
    await flush();
    await deps.index.markBuilt();
    deps.onRebuilt?.(records);
    deps.logger.warn({ records, ms: Date.now() - started }, 'identity map index rebuilt from its topic');
  }

  return {
    async ensureBuilt() {
      if (Date.now() - checkedAt < checkEveryMs) return;
      running ??= (async () => {
        try {
          if (!(await deps.index.isBuilt())) await rebuild();
          checkedAt = Date.now();
        } finally {
          running = undefined;
        }
      })();
      await running;
    },
  };
}
