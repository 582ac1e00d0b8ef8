import { AppError } from '../errors.js';

/**
 * ClickHouse 18.16's error text does not match @clickhouse/client's parser, so errors arrive as
 * plain `Error`s without a `code`. This is the one place that reads the code out of the text.
 */
export function clickhouseErrorCode(err: unknown): number | undefined {
  if (!(err instanceof Error)) return undefined;
  const fromClient = (err as { code?: unknown }).code;
  if (typeof fromClient === 'string' && /^\d+$/.test(fromClient)) return Number(fromClient);
  const match = /Code: (\d+)/.exec(err.message);
  return match ? Number(match[1]) : undefined;
}

// Server-side conditions that pass by themselves: overload, timeouts, too many parts, network.
// 225 no ZooKeeper, 242 a replicated table read-only (its ZooKeeper session lost), 243 no disk space,
// 999 a ZooKeeper operation failed: a cluster's outages, which pass when ZooKeeper or the disk is back.
const RETRYABLE_SERVER_CODES = new Set([159, 164, 202, 203, 209, 210, 225, 241, 242, 243, 252, 285, 319, 425, 999]);
const RETRYABLE_NETWORK = /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|socket hang up|Timeout error|other side closed/i;

// A full disk on 18.16 is rarely 243: an insert writes its part without reserving space, and the
// write fails with the file system's error, `Code: 75 (CANNOT_WRITE_TO_FILE_DESCRIPTOR) …
// errno: 28, strerror: No space left on device` (what a full replica answered in the disk-full
// scale test). 74/75 with errno 28 (ENOSPC) or 122 (EDQUOT) pass once space is freed; the same
// codes with another errno (an I/O error) stay refusals.
const WRITE_ERROR_CODES = new Set([74, 75]);
const DISK_FULL_ERRNO = /\berrno: (28|122)\b/;

function isDiskFullWrite(code: number | undefined, text: string): boolean {
  return code !== undefined && WRITE_ERROR_CODES.has(code) && DISK_FULL_ERRNO.test(text);
}

export function isRetryableClickHouseError(err: unknown): boolean {
  const code = clickhouseErrorCode(err);
  if (code !== undefined) return RETRYABLE_SERVER_CODES.has(code) || isDiskFullWrite(code, err instanceof Error ? err.message : '');
  return err instanceof Error && RETRYABLE_NETWORK.test(`${err.message} ${(err as { code?: unknown }).code ?? ''}`);
}

/**
 * Why an insert failed, for the alert and /readyz of a writer that keeps failing: `zookeeper`
 * (a replicated table without its coordination service: no session, read-only, an operation
 * lost), `disk_full`, `unreachable` (no answer), `overloaded`, or `other`.
 */
export type ClickHouseFailureCause = 'zookeeper' | 'disk_full' | 'unreachable' | 'overloaded' | 'other';
export const CLICKHOUSE_FAILURE_CAUSES: readonly ClickHouseFailureCause[] = ['zookeeper', 'disk_full', 'unreachable', 'overloaded', 'other'];

export function clickHouseFailureCause(err: unknown): ClickHouseFailureCause {
  const inner = err instanceof Error && 'cause' in err && err.cause instanceof Error ? err.cause : err;
  const code = clickhouseErrorCode(inner);
  const text = err instanceof Error ? `${err.message} ${inner instanceof Error ? inner.message : ''}` : String(err);
  if (code === 225 || code === 242 || code === 999 || /zookeeper|coordination::/i.test(text)) return 'zookeeper';
  if (code === 243 || isDiskFullWrite(code, text) || /no space left|not enough space/i.test(text)) return 'disk_full';
  if (code === undefined && inner instanceof Error && RETRYABLE_NETWORK.test(`${inner.message} ${(inner as { code?: unknown }).code ?? ''}`))
    return 'unreachable';
  if (code === 252 || code === 202 || code === 203 || code === 159) return 'overloaded';
  return 'other';
}

export function toClickHouseAppError(err: unknown, action: string): AppError {
  const code = clickhouseErrorCode(err);
  const retryable = isRetryableClickHouseError(err);
  const detail = err instanceof Error ? err.message.split('\n')[0] : String(err);
  return new AppError(retryable ? 'clickhouse_unavailable' : 'clickhouse_error', `clickhouse ${action} failed${code ? ` (code ${code})` : ''}: ${detail}`, {
    retryable,
    cause: err,
  });
}
