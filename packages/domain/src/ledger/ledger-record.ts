import { BillingLedgerRecord, compileValidator } from '@ingest/schemas';
import type { ValidateFunction } from 'ajv';
import { sql } from '@ingest/platform';

/**
 * The billing ledger's wire formats, one owner: the Kafka record key, the JSON value, and the
 * ClickHouse row of `billing_ledger` (see schemas/src/billing-ledger.ts for what a record says).
 */
export type { BillingLedgerRecord };

/** One key per record, never reused: compaction keeps every record. */
export function billingLedgerKey(record: Pick<BillingLedgerRecord, 'kind' | 'accountId' | 'period' | 'at'>): string {
  return record.kind === 'period_closed' ? `${record.accountId}/${record.period}/closed` : `${record.accountId}/${record.period}/plan/${record.at}`;
}

// Compiled on first use, not at import time.
let validate: ValidateFunction<BillingLedgerRecord> | undefined;

export function decodeLedgerRecord(value: Buffer | string | null): BillingLedgerRecord | undefined {
  if (value === null) return undefined;
  try {
    const parsed: unknown = JSON.parse(value.toString());
    validate ??= compileValidator<BillingLedgerRecord>(BillingLedgerRecord);
    return validate(parsed) ? (parsed as BillingLedgerRecord) : undefined;
  } catch {
    return undefined;
  }
}

export const LEDGER_TABLE = 'billing_ledger';
export const LEDGER_COLUMNS = [
  'record_key',
  'kind',
  'account_id',
  'period',
  'at',
  'at_ms',
  'plan',
  'previous_plan',
  'event_limit',
  'events_charged',
  'overage_refused',
  'recorded_at',
  'recorded_at_ms',
] as const;

export type LedgerRow = Record<(typeof LEDGER_COLUMNS)[number], string | number>;

/** DateTime columns take UTC 'YYYY-MM-DD hh:mm:ss' (works on 18.16 and current servers). */
const dateTime = (iso: string) => new Date(iso).toISOString().slice(0, 19).replace('T', ' ');

export function toLedgerRow(record: BillingLedgerRecord): LedgerRow {
  return {
    record_key: billingLedgerKey(record),
    kind: record.kind,
    account_id: record.accountId,
    period: record.period,
    at: dateTime(record.at),
    at_ms: Date.parse(record.at),
    plan: record.plan,
    previous_plan: record.previousPlan ?? '',
    event_limit: record.limit,
    events_charged: record.eventsCharged,
    overage_refused: record.overageRefused,
    recorded_at: dateTime(record.recordedAt),
    recorded_at_ms: Date.parse(record.recordedAt),
  };
}

/** A row as `ledgerQuery` reads it: 64-bit numbers as text (the client's JSON would round them otherwise). */
export interface LedgerRowRead {
  kind: string;
  account_id: string;
  period: string;
  at_ms_text: string;
  plan: string;
  previous_plan: string;
  limit_text: string;
  charged_text: string;
  refused_text: string;
  recorded_at_ms_text: string;
}

export function fromLedgerRow(row: LedgerRowRead): BillingLedgerRecord {
  return {
    v: 1,
    kind: row.kind as BillingLedgerRecord['kind'],
    accountId: row.account_id,
    period: row.period,
    at: new Date(Number(row.at_ms_text)).toISOString(),
    plan: row.plan as BillingLedgerRecord['plan'],
    previousPlan: row.previous_plan === '' ? null : (row.previous_plan as BillingLedgerRecord['plan']),
    limit: Number(row.limit_text),
    eventsCharged: Number(row.charged_text),
    overageRefused: Number(row.refused_text),
    recordedAt: new Date(Number(row.recorded_at_ms_text)).toISOString(),
  };
}

/**
 * The ledger as stored, oldest first. The copy into ClickHouse is at least once, so a record
 * may be inserted twice: the first copy of each key is the record (LIMIT 1 BY). Aliases differ
 * from column names, so ORDER BY sorts by the columns themselves.
 */
export function ledgerQuery(filter: { accountId?: string; period?: string }): string {
  const where = [filter.accountId ? sql`account_id = ${filter.accountId}` : '1', filter.period ? sql`period = ${filter.period}` : '1'].join(' AND ');
  return `SELECT kind, account_id, period, toString(at_ms) AS at_ms_text, plan, previous_plan, toString(event_limit) AS limit_text,
    toString(events_charged) AS charged_text, toString(overage_refused) AS refused_text, toString(recorded_at_ms) AS recorded_at_ms_text
    FROM ${LEDGER_TABLE} WHERE ${where}
    ORDER BY account_id, period, at_ms, record_key, recorded_at_ms LIMIT 1 BY record_key`;
}

const CSV_COLUMNS = ['kind', 'accountId', 'period', 'at', 'plan', 'previousPlan', 'limit', 'eventsCharged', 'overageRefused', 'recordedAt'] as const;

/** The ledger as CSV (RFC 4180, header row), for spreadsheets and invoicing tools. */
export function ledgerCsv(records: readonly BillingLedgerRecord[]): string {
  const cell = (v: unknown) => {
    const text = v === null || v === undefined ? '' : String(v);
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
  };
  return [CSV_COLUMNS.join(','), ...records.map((r) => CSV_COLUMNS.map((c) => cell(r[c])).join(','))].join('\r\n') + '\r\n';
}
