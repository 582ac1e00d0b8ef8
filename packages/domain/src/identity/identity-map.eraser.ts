import type { Producer } from '@ingest/platform';
import type { ErasureIdentifierType } from '@ingest/schemas';
import type { IdentityMapBuilder } from './identity-map.rebuild.js';
import { identityTopicMessages } from './identity-map.rebuild.js';
import type { IdentityMapIndex } from './identity-map.store.js';
import type { PersonRef } from './identity-record.js';

/**
 * Erasure of an email or domain from the identity map (docs/erasure.md): every entry of the
 * account that points to it gets a tombstone on the topic (acks=all) and is then removed from
 * the index, so later userId-only events are not joined to the erased identity. Entries that
 * only link an anonymous id to a user stay: without the user's entry they lead nowhere.
 */
export interface IdentityMapEraser {
  erase(accountId: string, type: ErasureIdentifierType, value: string): Promise<number>;
}

export function createIdentityMapEraser(deps: { index: IdentityMapIndex; builder: IdentityMapBuilder; producer: Producer; topic: string }): IdentityMapEraser {
  return {
    async erase(accountId, type, value) {
      await deps.builder.ensureBuilt();
      const refs: PersonRef[] = [];
      await deps.index.scan(accountId, (ref, entry) => {
        if ((type === 'email' ? entry.email : entry.domain) === value) refs.push(ref);
      });
      if (refs.length === 0) return 0;
      await deps.producer.send(
        deps.topic,
        identityTopicMessages(
          accountId,
          refs.map((ref) => [ref, null] as const),
        ),
      );
      await deps.index.remove(accountId, refs);
      return refs.length;
    },
  };
}
