import { AppError } from '@ingest/platform';
import type { Redis } from '@ingest/platform';
import { type ContactCompanyLink, pendingLinkEmail } from './crm-links.js';
import type { CrmObject } from './crm-writes.js';
import type { RecordState } from './record-state.js';

/**
 * The Redis keys of the CRM sink's record state and ledgers, and the read-only half of their
 * store. The sink writes them (crm-sink record-state.store.ts); the gateway's dry-run only
 * reads them, so it sees exactly the state the sink would apply the next event to.
 */
export interface RecordStateKeys {
  /** Per (account, object, key): a hash of the fields the sink owns; the account is a Redis Cluster hash tag. */
  state(accountId: string, object: CrmObject, key: string): string;
  /** Per (account, eventId, rule): set once the event-rule's delta was applied. */
  ledger(ledgerKey: string): string;
  /** Per (account, eventId, rule): set once the event-rule's activity was created. */
  activity(ledgerKey: string): string;
  /** Per (account, domain): a set of the contacts waiting for that company to be linked to it (crm-links.ts). */
  pendingLinks(accountId: string, domain: string): string;
}

/**
 * `crm:<account>:<event>:<rule>` as `crm:{<account>}:<event>:<rule>`: the account becomes the
 * Redis Cluster hash tag, as in the state key, so the apply script's two keys share a slot. The
 * parts of a ledger key are URI-encoded, so its first `:`-separated part after `crm` is the account.
 */
function accountTagged(ledgerKey: string): string {
  const [namespace, account, ...rest] = ledgerKey.split(':');
  return `${namespace}:{${account}}:${rest.join(':')}`;
}

export function recordStateKeys(keyPrefix = ''): RecordStateKeys {
  return {
    state: (accountId, object, key) => `${keyPrefix}crm:state:{${encodeURIComponent(accountId)}}:${object}:${encodeURIComponent(key)}`,
    ledger: (ledgerKey) => `${keyPrefix}${accountTagged(ledgerKey)}`,
    activity: (ledgerKey) => `${keyPrefix}${accountTagged(ledgerKey)}:activity`,
    pendingLinks: (accountId, domain) => `${keyPrefix}crm:links:{${encodeURIComponent(accountId)}}:company:${encodeURIComponent(domain)}`,
  };
}

export interface RecordStateReader {
  /** Which of `fields` the record's hash has. */
  present(accountId: string, object: CrmObject, key: string, fields: readonly string[]): Promise<Set<string>>;
  /** The values of `fields` the record's hash has (absent ones are left out). */
  values(accountId: string, object: CrmObject, key: string, fields: readonly string[]): Promise<RecordState>;
  /** The ledger keys whose event-rule delta was applied already. */
  applied(ledgerKeys: readonly string[]): Promise<Set<string>>;
  /** The ledger keys whose activity was created already. */
  activitiesDone(ledgerKeys: readonly string[]): Promise<Set<string>>;
  /** The contacts waiting for these companies, to be linked when the sink writes them. */
  waitingLinks?(accountId: string, domains: readonly string[]): Promise<ContactCompanyLink[]>;
}

export function createRecordStateReader(options: { redis: Redis; keyPrefix?: string }): RecordStateReader {
  const { redis } = options;
  const keys = recordStateKeys(options.keyPrefix);
  const existing = async (ledgerKeys: readonly string[], keyOf: (k: string) => string): Promise<Set<string>> => {
    if (ledgerKeys.length === 0) return new Set();
    const values = await withoutArguments(redis.mget(...ledgerKeys.map(keyOf)));
    return new Set(ledgerKeys.filter((_, i) => values[i] !== null));
  };
  const values = async (accountId: string, object: CrmObject, key: string, fields: readonly string[]): Promise<RecordState> => {
    if (fields.length === 0) return {};
    const found = await withoutArguments(redis.hmget(keys.state(accountId, object, key), ...fields));
    const state: RecordState = {};
    fields.forEach((f, i) => {
      const v = found[i];
      if (v !== null && v !== undefined) state[f] = v;
    });
    return state;
  };
  return {
    async present(accountId, object, key, fields) {
      return new Set(Object.keys(await values(accountId, object, key, fields)));
    },
    values,
    applied: (ledgerKeys) => existing(ledgerKeys, keys.ledger),
    activitiesDone: (ledgerKeys) => existing(ledgerKeys, keys.activity),
    async waitingLinks(accountId, domains) {
      const unique = [...new Set(domains)];
      if (unique.length === 0) return [];
      const pipeline = redis.pipeline();
      for (const domain of unique) pipeline.smembers(keys.pendingLinks(accountId, domain));
      const results = (await withoutArguments(pipeline.exec())) ?? [];
      const failed = results.find(([err]) => err !== null);
      if (failed) throw new AppError('crm_state_unavailable', `crm record state unavailable: ${failed[0]?.message ?? 'unknown'}`, { retryable: true });
      return unique.flatMap((domain, i) =>
        ((results[i]?.[1] as string[] | undefined) ?? []).flatMap((member) => {
          const email = pendingLinkEmail(member);
          return email === undefined ? [] : [{ email, domain }];
        }),
      );
    },
  };
}

/**
 * ioredis attaches the failed command with its arguments to its errors, and those arguments are
 * event contents (emails in keys, property values): the error that leaves here carries only
 * Redis's own message.
 */
export async function withoutArguments<T>(command: Promise<T>): Promise<T> {
  try {
    return await command;
  } catch (err) {
    throw new AppError('crm_state_unavailable', `crm record state unavailable: ${err instanceof Error ? err.message : String(err)}`, { retryable: true });
  }
}
