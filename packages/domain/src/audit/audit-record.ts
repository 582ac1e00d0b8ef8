import { AuditRecord, AUDIT_CURSOR_PATTERN, compileValidator } from '@ingest/schemas';
import type { ValidateFunction } from 'ajv';
import { sql } from '@ingest/platform';

/**
 * The audit log's wire formats, one owner: the Kafka record (JSON, keyed by account so one
 * account's records keep their order), the ClickHouse row of `audit_log`, the query that reads
 * it back page by page, and the secret filter every record passes through before it is written.
 */
export type { AuditRecord };

export const AUDIT_TABLE = 'audit_log';

/**
 * Field names whose values are secrets. The writers build before/after from secret-free views
 * (key views without the hash, credential views without tokens); this is the second lock, so a
 * field added to a view later cannot leak into a record that is kept for years.
 */
const SECRET_FIELD = /token|secret|password|apikey|api_key|hash|credential$|authorization|cookie/i;
const MAX_DEPTH = 6;
const MAX_STRING = 2_000;
const MAX_ITEMS = 100;

export function withoutSecrets(value: unknown, depth = 0): unknown {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'string') return value.length > MAX_STRING ? `${value.slice(0, MAX_STRING)}…` : value;
  if (depth >= MAX_DEPTH || typeof value !== 'object') return '[omitted]';
  if (Array.isArray(value)) return value.slice(0, MAX_ITEMS).map((v) => withoutSecrets(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined) continue;
    out[key] = SECRET_FIELD.test(key) ? '[redacted]' : withoutSecrets(v, depth + 1);
  }
  return out;
}

// Compiled on first use, not at import time.
let validate: ValidateFunction<AuditRecord> | undefined;

export function decodeAuditRecord(value: Buffer | string | null): AuditRecord | undefined {
  if (value === null) return undefined;
  try {
    const parsed: unknown = JSON.parse(value.toString());
    validate ??= compileValidator<AuditRecord>(AuditRecord);
    return validate(parsed) ? (parsed as AuditRecord) : undefined;
  } catch {
    return undefined;
  }
}

export const AUDIT_COLUMNS = [
  'id',
  'at',
  'at_ms',
  'account_id',
  'actor_type',
  'actor',
  'actor_role',
  'action',
  'target',
  'ip',
  'request_id',
  'before_json',
  'after_json',
] as const;
export type AuditRow = Record<(typeof AUDIT_COLUMNS)[number], string | number>;

const dateTime = (ms: number) => new Date(ms).toISOString().slice(0, 19).replace('T', ' ');

export function toAuditRow(record: AuditRecord): AuditRow {
  const atMs = Date.parse(record.at);
  return {
    id: record.id,
    at: dateTime(atMs),
    at_ms: atMs,
    account_id: record.accountId ?? '',
    actor_type: record.actor.type,
    actor: record.actor.name,
    actor_role: record.actor.role ?? '',
    action: record.action,
    target: record.target ?? '',
    ip: record.ip,
    request_id: record.requestId,
    before_json: record.before === null ? '' : JSON.stringify(record.before),
    after_json: record.after === null ? '' : JSON.stringify(record.after),
  };
}

export interface AuditRowRead {
  id: string;
  at_ms_text: string;
  account_id: string;
  actor_type: string;
  actor: string;
  actor_role: string;
  action: string;
  target: string;
  ip: string;
  request_id: string;
  before_json: string;
  after_json: string;
}

export function fromAuditRow(row: AuditRowRead): AuditRecord {
  const parse = (text: string) => (text === '' ? null : (JSON.parse(text) as Record<string, unknown>));
  return {
    v: 1,
    id: row.id,
    at: new Date(Number(row.at_ms_text)).toISOString(),
    actor: { type: row.actor_type as AuditRecord['actor']['type'], name: row.actor, ...(row.actor_role ? { role: row.actor_role } : {}) },
    action: row.action,
    accountId: row.account_id === '' ? null : row.account_id,
    target: row.target === '' ? null : row.target,
    ip: row.ip,
    requestId: row.request_id,
    before: parse(row.before_json),
    after: parse(row.after_json),
  };
}

export interface AuditFilter {
  accountId?: string;
  actor?: string;
  actorType?: AuditRecord['actor']['type'];
  action?: string;
  fromMs?: number;
  toMs?: number;
  /** The last record of the previous page: this page starts after it (older). */
  after?: { atMs: number; id: string };
  limit: number;
}

/** Cursors are opaque to callers: the position of the last record shown, base64url. */
/**
 * A page position in plain text, `<epoch ms>:<record id>`: keyset paging works from any position,
 * so every string of AUDIT_CURSOR_PATTERN (the schema's) is a valid cursor (the API fuzzer found
 * that an opaque encoding let schema-valid cursors be refused).
 */
export function encodeAuditCursor(record: Pick<AuditRecord, 'at' | 'id'>): string {
  return `${Date.parse(record.at)}:${record.id}`;
}

export function decodeAuditCursor(cursor: string): { atMs: number; id: string } | undefined {
  const match = new RegExp(AUDIT_CURSOR_PATTERN).exec(cursor);
  if (!match) return undefined;
  const colon = cursor.indexOf(':');
  return { atMs: Number(cursor.slice(0, colon)), id: cursor.slice(colon + 1) };
}

/**
 * Newest first, one page (limit + 1 rows: the extra one says whether another page follows).
 * The copy into ClickHouse is at least once: one row per id (LIMIT 1 BY). Keyset paging on
 * (at_ms, id), spelled without tuple comparison so it reads the same on 18.16.
 */
export function auditQuery(filter: AuditFilter): string {
  const where = ['1'];
  if (filter.accountId !== undefined) where.push(sql`account_id = ${filter.accountId}`);
  if (filter.actor !== undefined) where.push(sql`actor = ${filter.actor}`);
  if (filter.actorType !== undefined) where.push(sql`actor_type = ${filter.actorType}`);
  if (filter.action !== undefined) where.push(sql`action = ${filter.action}`);
  if (filter.fromMs !== undefined) where.push(sql`at_ms >= ${Math.trunc(filter.fromMs)}`);
  if (filter.toMs !== undefined) where.push(sql`at_ms < ${Math.trunc(filter.toMs)}`);
  if (filter.after) {
    const { atMs, id } = filter.after;
    where.push(sql`(at_ms < ${Math.trunc(atMs)} OR (at_ms = ${Math.trunc(atMs)} AND id < ${id}))`);
  }
  return `SELECT id, toString(at_ms) AS at_ms_text, account_id, actor_type, actor, actor_role, action, target, ip, request_id, before_json, after_json
    FROM ${AUDIT_TABLE} WHERE ${where.join(' AND ')}
    ORDER BY at_ms DESC, id DESC LIMIT 1 BY id LIMIT ${sql`${Math.trunc(filter.limit) + 1}`}`;
}
