import { type CrmObject, type PlannedOperation, recordKeyOf } from '@ingest/domain';

/**
 * Gathers planned operations per CRM record for a short window, so many events for one contact
 * become one upsert with the final values. Buffers are per account: an account's records are
 * flushed together when its oldest operation is `windowMs` old or it holds `maxRecords` records.
 * Pure: the clock is passed in.
 */
export interface RecordBuffer<E> {
  object: CrmObject;
  key: string;
  /** In arrival order, which is event order within a partition. */
  ops: { op: PlannedOperation; event: E }[];
}

export interface AccountFlush<E> {
  accountId: string;
  records: RecordBuffer<E>[];
}

export interface Coalescer<E> {
  add(accountId: string, op: PlannedOperation, event: E, nowMs: number): void;
  /** Removes and returns the accounts that are due (all of them with `all`). */
  takeDue(nowMs: number, all?: boolean): AccountFlush<E>[];
  /** Milliseconds until the next account is due; undefined when nothing is buffered. */
  nextDueInMs(nowMs: number): number | undefined;
  /** Removes and returns one account's buffer, due or not (the account is being parked). */
  take(accountId: string): AccountFlush<E> | undefined;
  /** The account has buffered operations. */
  has(accountId: string): boolean;
}

export function createCoalescer<E>(options: { windowMs: number; maxRecords: number }): Coalescer<E> {
  const accounts = new Map<string, { firstAtMs: number; records: Map<string, RecordBuffer<E>> }>();
  const isDue = (a: { firstAtMs: number; records: Map<string, unknown> }, nowMs: number) =>
    nowMs - a.firstAtMs >= options.windowMs || a.records.size >= options.maxRecords;

  return {
    add(accountId, op, event, nowMs) {
      let account = accounts.get(accountId);
      if (!account) {
        account = { firstAtMs: nowMs, records: new Map() };
        accounts.set(accountId, account);
      }
      const key = recordKeyOf(op);
      const id = `${op.object}\u0000${key}`;
      let record = account.records.get(id);
      if (!record) {
        record = { object: op.object, key, ops: [] };
        account.records.set(id, record);
      }
      record.ops.push({ op, event });
    },
    takeDue(nowMs, all = false) {
      const due: AccountFlush<E>[] = [];
      for (const [accountId, account] of accounts) {
        if (!all && !isDue(account, nowMs)) continue;
        accounts.delete(accountId);
        due.push({ accountId, records: [...account.records.values()] });
      }
      return due;
    },
    take(accountId) {
      const account = accounts.get(accountId);
      if (!account) return undefined;
      accounts.delete(accountId);
      return { accountId, records: [...account.records.values()] };
    },
    has: (accountId) => accounts.has(accountId),
    nextDueInMs(nowMs) {
      let next: number | undefined;
      for (const account of accounts.values()) {
        const wait = isDue(account, nowMs) ? 0 : account.firstAtMs + options.windowMs - nowMs;
        next = next === undefined ? wait : Math.min(next, wait);
      }
      return next;
    },
  };
}
