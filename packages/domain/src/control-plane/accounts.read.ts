import type { KafkaClient } from '@ingest/platform';
import { readTopicToEnd } from '@ingest/platform';
import type { Logger } from '@ingest/platform';
import { createAccountDecoder } from './control-plane.state.js';
import type { Account } from './types.js';

/**
 * Every account as control.accounts holds it now: the topic read to its end once, for services
 * that need the accounts at one moment (the billing ledger's closer) rather than a live view.
 */
export async function readAccounts(kafka: KafkaClient, topic: string, logger: Logger): Promise<Map<string, Account>> {
  const decode = createAccountDecoder();
  const accounts = new Map<string, Account>();
  await readTopicToEnd(kafka, {
    topic,
    logger,
    onMessage: (m) => {
      const decoded = decode(m.key, m.value);
      if (!decoded.ok) return;
      if (decoded.value) accounts.set(decoded.id, decoded.value);
      else accounts.delete(decoded.id);
    },
  });
  return accounts;
}
