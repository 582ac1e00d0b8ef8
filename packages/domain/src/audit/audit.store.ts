import { randomUUID } from 'node:crypto';
import type { ClickHouse, Producer } from '@ingest/platform';
import { type AuditFilter, auditQuery, type AuditRecord, type AuditRowRead, encodeAuditCursor, fromAuditRow, withoutSecrets } from './audit-record.js';

/** What a writer says about one change; the store adds the id and passes before/after through the secret filter. */
export interface AuditEntry {
  at: Date;
  actor: AuditRecord['actor'];
  action: string;
  accountId: string | null;
  target: string | null;
  ip: string;
  requestId: string;
  before?: object | null;
  after?: object | null;
}

/** Appends to the audit topic (acks=all, the shared idempotent producer); resolves once Kafka has it. */
export interface AuditWriter {
  append(record: AuditRecord): Promise<void>;
}

export function toAuditRecord(entry: AuditEntry): AuditRecord {
  const clean = (v: object | null | undefined) => (v === undefined || v === null ? null : (withoutSecrets(v) as Record<string, unknown>));
  return {
    v: 1,
    id: randomUUID(),
    at: entry.at.toISOString(),
    actor: entry.actor,
    action: entry.action,
    accountId: entry.accountId,
    target: entry.target,
    ip: entry.ip,
    requestId: entry.requestId,
    before: clean(entry.before),
    after: clean(entry.after),
  };
}

export function createAuditWriter(producer: Producer, topic: string): AuditWriter {
  return {
    async append(record) {
      // Keyed by account: one account's records stay in order on one partition.
      await producer.send(topic, [{ key: record.accountId ?? '-', value: JSON.stringify(record) }]);
    },
  };
}

/** The audit log as copied into ClickHouse, newest first, a page at a time. */
export interface AuditReader {
  page(filter: AuditFilter): Promise<{ records: AuditRecord[]; nextCursor: string | null }>;
}

export function createAuditReader(ch: ClickHouse): AuditReader {
  return {
    async page(filter) {
      const rows = await ch.query<AuditRowRead>(auditQuery(filter));
      const records = rows.slice(0, filter.limit).map(fromAuditRow);
      const last = records.at(-1);
      return { records, nextCursor: rows.length > filter.limit && last ? encodeAuditCursor(last) : null };
    },
  };
}
