import { type Account, type Allowance, RESERVE_EVENTS, type ReservationResult } from '@ingest/domain';
import { ACL_REFUSED, AppError, type Redis, redisScript } from '@ingest/platform';
import type { FastifyRequest } from 'fastify';
import { type AccountAdmission, type AccountRateLimits, countedEvents, prepareAdmission } from './account-rate.limiter.js';
import { ADMIT_ACCOUNT_REQUEST } from './account-rate.script.js';

/**
 * POST /v1/events asks Redis once where it asked twice: the per-account ceilings and, only if
 * they admit the request, the allowance's reservation, in one script (both scripts' text as they
 * are, each run as a Lua function over its own slice of the keys and arguments). A refused
 * request is charged nothing, as before; one round trip fewer a request (docs/benchmarks.md,
 * "Redis per request and per id"). All keys carry the account as their hash tag, so the script
 * stays in one Redis Cluster slot. The gateway's Redis user needs the grant for it that `ingest
 * setup` of this release creates (docs/security.md); without it, the two calls as before.
 *
 * KEYS: the ceilings' keys, then the reservation's. ARGV: how many keys and arguments are the
 * ceilings', their arguments, then the reservation's. Returns {admission} when refused, else
 * {admission, reservation}.
 */
export const ADMIT_THEN_RESERVE = `
local function admit(KEYS, ARGV)
${ADMIT_ACCOUNT_REQUEST}
end
local function reserve(KEYS, ARGV)
${RESERVE_EVENTS}
end
local admitKeys, admitArgs = tonumber(ARGV[1]), tonumber(ARGV[2])
local admitted = admit({unpack(KEYS, 1, admitKeys)}, {unpack(ARGV, 3, 2 + admitArgs)})
if admitted[1] ~= 1 then return {admitted} end
return {admitted, reserve({unpack(KEYS, admitKeys + 1, #KEYS)}, {unpack(ARGV, 3 + admitArgs, #ARGV)})}
`;

export interface AdmissionDeps {
  redis: Redis;
  keyPrefix: string;
  limits: AccountRateLimits;
  allowance: Allowance;
  /** The hook's handling of a decision and of Redis being away (account-rate.limiter.ts). */
  admission: AccountAdmission;
}

export interface EventsAdmission {
  /**
   * Counts the request against its account's ceilings and, if they admit it, reserves the
   * allowance of `eventIds` ('' for generated ids): the 429 is thrown as the hook throws it.
   * Redis away: the allowance's retryable error (503), or the ceilings' when they fail closed.
   */
  admitAndReserve(request: FastifyRequest, account: Account, eventIds: string[], atMs: number): Promise<ReservationResult>;
  /** The ceilings alone, for a request with nothing to reserve (none of its events is valid). */
  admit(request: FastifyRequest): Promise<void>;
}

export function createEventsAdmission(deps: AdmissionDeps): EventsAdmission {
  const run = redisScript(ADMIT_THEN_RESERVE, 'admit_and_reserve_events');
  return {
    admit: (request) => deps.admission.admit(request),
    async admitAndReserve(request, account, eventIds, atMs) {
      const admission = prepareAdmission(deps, account, countedEvents(request));
      const reservation = deps.allowance.prepareReserveEvents(account, eventIds, atMs);
      let out: [number[], number[]?];
      try {
        out = (await run(
          deps.redis,
          [...admission.keys, ...reservation.keys],
          [admission.keys.length, admission.args.length, ...admission.args, ...reservation.args],
        )) as [number[], number[]?];
      } catch (err) {
        // A Redis user set up by an older release has no grant for one script over both key
        // families (redis-acl.ts): the two calls as before, so skipping `ingest setup` costs a
        // round trip, not the API. The refusal is logged at error level (redis.ts).
        if (ACL_REFUSED.test(err instanceof Error ? err.message : String(err))) {
          await deps.admission.admit(request);
          return deps.allowance.reserveEvents(account, eventIds, atMs);
        }
        // What the two calls answered when Redis was away: the ceilings failing closed are the
        // 503 first; failing open they were skipped, and the allowance (always closed) is the 503.
        const closed = deps.admission.unavailable(request, err);
        if (closed) throw closed;
        throw new AppError('allowance_unavailable', `allowance reserve failed: ${(err as Error).message}`, { retryable: true, cause: err });
      }
      deps.admission.apply(request, admission.decode(out[0]));
      return reservation.decode(out[1] ?? []);
    },
  };
}
