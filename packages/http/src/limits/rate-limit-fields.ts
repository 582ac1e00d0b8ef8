import type { FastifyReply } from 'fastify';

/**
 * The `RateLimit-Policy` and `RateLimit` header fields of the IETF draft
 * (draft-ietf-httpapi-ratelimit-headers-10): Structured Field lists of one item per policy, named
 * like the `limit` of a 429 problem: `"ip"` (per client address), `"account_requests"`,
 * `"account_events"` (per account). They come beside the older `RateLimit-Limit` /
 * `-Remaining` / `-Reset` trio that @fastify/rate-limit sends for the per-address limit.
 *
 * Written by hand: the values are a quoted token and integer parameters, smaller than the
 * code that would call a Structured Fields library.
 */
export interface RateLimitItem {
  name: 'ip' | 'account_requests' | 'account_events';
  /** Units the policy allows per window (`q`). */
  quota: number;
  windowSeconds: number;
  /** `qu`: absent for requests (the draft's default unit). */
  unit?: 'events';
  remaining: number;
  /** Seconds until the quota is whole again; on a refusal, when to retry. */
  resetSeconds: number;
}

export function policyField(items: readonly RateLimitItem[]): string {
  return items.map((i) => `"${i.name}";q=${i.quota};w=${i.windowSeconds}${i.unit ? `;qu="${i.unit}"` : ''}`).join(', ');
}

export function stateField(items: readonly RateLimitItem[]): string {
  return items.map((i) => `"${i.name}";r=${i.remaining};t=${i.resetSeconds}`).join(', ');
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The account's ceilings as this request left them (account-rate.limiter.ts); when refused, only the one that refused. */
    accountRate?: { items: RateLimitItem[]; refused: boolean };
  }
}

/** The per-address item, read back from the headers @fastify/rate-limit set (it counts per minute). */
function ipItem(reply: FastifyReply): RateLimitItem | undefined {
  const [limit, remaining, reset] = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset'].map((h) => Number(reply.getHeader(h)));
  if (limit === undefined || remaining === undefined || reset === undefined || ![limit, remaining, reset].every(Number.isFinite)) return undefined;
  return { name: 'ip', quota: limit, windowSeconds: 60, remaining, resetSeconds: reset };
}

/**
 * Sets both fields on a response: every policy that applied to the request, or, on a 429 of an
 * account ceiling, only the one that refused (a 429 of the per-address limit: `"ip";r=0`).
 */
export function setRateLimitFields(reply: FastifyReply): void {
  const account = reply.request.accountRate;
  const ip = account?.refused ? undefined : ipItem(reply);
  const items = [...(ip ? [ip] : []), ...(account?.items ?? [])];
  if (items.length === 0) return;
  reply.header('ratelimit-policy', policyField(items));
  reply.header('ratelimit', stateField(items));
}
