/**
 * An account's CRM sync health (issue 25): its current state with the reason, its last success
 * and failure, and how many events were synced, skipped and failed per UTC hour. The crm-sink
 * writes it (sync-health.store.ts), the console shows it to the account's owner and the sink's
 * metrics show it to operators. This module is the pure half: the states, the record's encoding
 * (version `v`) and the hourly series. docs/crm-sync.md, "Sync health".
 */

/**
 * - `running`: the last flush synced something (or the credential was repaired).
 * - `failing`: the last flush of the account failed every one of its events (dead-lettered).
 * - `parked`: the CRM is blocked for the account (rate limit beyond the hold, outage, hanging
 *   calls, suspended account): its events wait in the park and are retried.
 * - `credential_broken`: the CRM refused the credential (401/403), it is missing or cannot be
 *   decrypted, or its refresh failed (set by whoever finds out: `markCredentialBroken`).
 */
export const SYNC_HEALTH_STATES = ['running', 'failing', 'parked', 'credential_broken'] as const;
export type SyncHealthState = (typeof SYNC_HEALTH_STATES)[number];

export const SYNC_OUTCOMES = ['synced', 'skipped', 'failed'] as const;
export type SyncOutcome = (typeof SYNC_OUTCOMES)[number];
export type OutcomeCounts = Record<SyncOutcome, number>;

/** The record's format; a reader keeps the fields it knows and ignores the rest. */
export const SYNC_HEALTH_VERSION = 1;
/** The owners' chart: the last 7 days, hour by hour. */
export const SYNC_HEALTH_HISTORY_HOURS = 7 * 24;
/** Reasons are shown to owners and kept in Redis: bounded. */
export const SYNC_HEALTH_REASON_MAX = 300;

export interface SyncHealthRecord {
  v: number;
  state: SyncHealthState;
  /** Why the account is not running, in words an owner can act on; absent when running. */
  reason?: string;
  /** When the current state began (epoch ms). */
  sinceMs: number;
  /** When the account last left `running` without coming back (epoch ms); absent when running. */
  unhealthySinceMs?: number;
  updatedAtMs: number;
  lastSuccessAtMs?: number;
  lastFailureAtMs?: number;
}

/** The Redis hash fields of a record (all strings), as the store's script writes them. */
export function decodeSyncHealth(fields: Record<string, string>): SyncHealthRecord | undefined {
  const state = fields.state;
  if (!(SYNC_HEALTH_STATES as readonly string[]).includes(state ?? '')) return undefined;
  const num = (name: string): number | undefined => {
    const value = Number(fields[name]);
    return fields[name] !== undefined && fields[name] !== '' && Number.isFinite(value) ? value : undefined;
  };
  const record: SyncHealthRecord = {
    v: num('v') ?? 1,
    state: state as SyncHealthState,
    sinceMs: num('since') ?? 0,
    updatedAtMs: num('updatedAt') ?? 0,
  };
  if (fields.reason) record.reason = fields.reason;
  const optional = { unhealthySinceMs: num('unhealthySince'), lastSuccessAtMs: num('lastSuccessAt'), lastFailureAtMs: num('lastFailureAt') };
  for (const [key, value] of Object.entries(optional)) if (value !== undefined && value > 0) record[key as keyof typeof optional] = value;
  return record;
}

/** A reason as stored: one line, at most SYNC_HEALTH_REASON_MAX characters. */
export function boundedReason(reason: string): string {
  const line = reason.replace(/\s+/g, ' ').trim();
  return line.length > SYNC_HEALTH_REASON_MAX ? `${line.slice(0, SYNC_HEALTH_REASON_MAX - 1)}…` : line;
}

/** Dead-letter codes that mean the credential, not the events, is at fault. */
export function isCredentialFailure(code: string): boolean {
  return code === 'crm_auth' || code.startsWith('crm_credential_');
}

/** The UTC day (YYYYMMDD) of the hash that holds an hour's counts, and its field prefix (HH). */
export function hourBucket(atMs: number): { day: string; hour: string } {
  const iso = new Date(atMs).toISOString();
  return { day: iso.slice(0, 10).replace(/-/g, ''), hour: iso.slice(11, 13) };
}

/** The UTC days whose hashes cover the `hours` hours ending with the one holding `nowMs`, oldest first. */
export function daysCovering(nowMs: number, hours: number): string[] {
  const days: string[] = [];
  const last = Math.floor(nowMs / 3_600_000);
  for (let h = last - hours + 1; h <= last; h++) {
    const { day } = hourBucket(h * 3_600_000);
    if (days[days.length - 1] !== day) days.push(day);
  }
  return days;
}

export interface HourCounts extends OutcomeCounts {
  /** Start of the hour, ISO 8601 UTC. */
  hour: string;
}

/**
 * The `hours` hours ending with the current one, oldest first, every hour present (0 when
 * none), from the day hashes read (`byDay`: day → {`HH:outcome`: count}).
 */
export function hourlySeries(nowMs: number, hours: number, byDay: ReadonlyMap<string, Record<string, string>>): HourCounts[] {
  const last = Math.floor(nowMs / 3_600_000);
  const series: HourCounts[] = [];
  for (let h = last - hours + 1; h <= last; h++) {
    const at = h * 3_600_000;
    const { day, hour } = hourBucket(at);
    const fields = byDay.get(day) ?? {};
    const count = (outcome: SyncOutcome) => Math.max(0, Number(fields[`${hour}:${outcome}`] ?? 0) || 0);
    series.push({ hour: new Date(at).toISOString(), synced: count('synced'), skipped: count('skipped'), failed: count('failed') });
  }
  return series;
}

/** The sums of the last `hours` entries of a series. */
export function totalsOf(series: readonly HourCounts[], hours: number): OutcomeCounts {
  const totals: OutcomeCounts = { synced: 0, skipped: 0, failed: 0 };
  for (const h of series.slice(-hours)) for (const outcome of SYNC_OUTCOMES) totals[outcome] += h[outcome];
  return totals;
}
