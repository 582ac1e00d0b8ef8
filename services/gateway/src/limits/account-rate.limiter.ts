import type { Account, Plan } from '@ingest/domain';
import { MAX_EVENTS_PER_REQUEST } from '@ingest/schemas';
import { AppError, METRIC_NAMES, type Redis, type RedisArg, redisScript, type Registry, sharedCounter } from '@ingest/platform';
import type { FastifyRequest } from 'fastify';
import { ProblemError, type RateLimitItem } from '@ingest/http';
import type { GatewayConfig } from '../config.js';
import { ADMIT_ACCOUNT_REQUEST } from './account-rate.script.js';
import { type AccountRatePolicyName, capacityOf, gcraParams, type RatePolicy } from './account-rate.window.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * The route's JSON body carries `events` or a Segment `batch` (at most MAX_EVENTS_PER_REQUEST),
     * each counted against the account's events/s ceiling; `one`: the body is one event (Segment's single calls).
     */
    countsEvents?: boolean | 'one';
    /**
     * The route checks the per-account ceilings itself, in the same Redis call as its allowance
     * (admission.ts): the preHandler hook leaves it alone.
     */
    admitsWithAllowance?: boolean;
  }
}

/** Per plan: requests/s and events/s of one account (all replicas together), and the burst. */
export interface AccountRateLimits {
  requestsPerSecond: Readonly<Record<Plan, number>>;
  eventsPerSecond: Readonly<Record<Plan, number>>;
  burstSeconds: number;
}

export function accountRateLimitsOf(config: GatewayConfig): AccountRateLimits {
  return {
    requestsPerSecond: {
      free: config.ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_FREE,
      pro: config.ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_PRO,
      growth: config.ACCOUNT_RATE_LIMIT_REQUESTS_PER_SECOND_GROWTH,
    },
    eventsPerSecond: {
      free: config.ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_FREE,
      pro: config.ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_PRO,
      growth: config.ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_GROWTH,
    },
    burstSeconds: config.ACCOUNT_RATE_LIMIT_BURST_SECONDS,
  };
}

/**
 * Refuses settings under which a valid POST /v1/events (up to MAX_EVENTS_PER_REQUEST events)
 * would be larger than the events bucket: no wait could then admit it, and its caller would be
 * told to retry for ever. Throws a message naming the settings.
 */
export function checkAccountRateLimits(limits: AccountRateLimits): void {
  for (const plan of Object.keys(limits.eventsPerSecond) as Plan[]) {
    const bucket = limits.eventsPerSecond[plan] * limits.burstSeconds;
    if (bucket < MAX_EVENTS_PER_REQUEST) {
      throw new AppError(
        'invalid_config',
        `invalid configuration: ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_${plan.toUpperCase()} × ACCOUNT_RATE_LIMIT_BURST_SECONDS is ${bucket} events; a burst must hold the ${MAX_EVENTS_PER_REQUEST} events of one POST /v1/events`,
      );
    }
  }
}

export function policiesFor(limits: AccountRateLimits, plan: Plan): [RatePolicy, RatePolicy] {
  return [
    { name: 'account_requests', ratePerSecond: limits.requestsPerSecond[plan], burstSeconds: limits.burstSeconds },
    { name: 'account_events', ratePerSecond: limits.eventsPerSecond[plan], burstSeconds: limits.burstSeconds },
  ];
}

/**
 * Only POST /v1/events and the Segment-compatible routes count their events: the envelope (1 to
 * 100 `events` or `batch` messages, checked before this hook; a single Segment call is one) is
 * what is counted. Bulk jobs and CSV uploads count as one request each: they are governed by the
 * upload slots (concurrent jobs), their byte limits and the allowance, the same for both
 * (docs/limits.md, "Backfills"). The cap only guards a route that opts in without an envelope.
 */
const MAX_COUNTED_EVENTS = MAX_EVENTS_PER_REQUEST;

/** The events a request's body carries (0 for anything that is not `{ events: [...] }` or `{ batch: [...] }`, e.g. a CSV stream). */
export function eventsIn(body: unknown): number {
  const { events, batch } = body !== null && typeof body === 'object' ? (body as { events?: unknown; batch?: unknown }) : {};
  const list = Array.isArray(events) ? events : Array.isArray(batch) ? batch : undefined;
  return list ? Math.min(list.length, MAX_COUNTED_EVENTS) : 0;
}

export type AccountRateDecision =
  | { allowed: true; items: RateLimitItem[] }
  | { allowed: false; hit: AccountRatePolicyName; retryAfterSeconds: number; items: RateLimitItem[]; policy: RatePolicy; events: number };

export interface AccountRateLimiterDeps {
  redis: Redis;
  keyPrefix: string;
  limits: AccountRateLimits;
}

/** An admission as the keys and arguments of ADMIT_ACCOUNT_REQUEST, and how to read its answer. */
export interface PreparedAdmission {
  keys: string[];
  args: RedisArg[];
  decode(out: number[]): AccountRateDecision;
}

/** Both ceilings of one request, as a script call not yet made (admission.ts runs it with the allowance's). */
export function prepareAdmission(
  deps: Pick<AccountRateLimiterDeps, 'keyPrefix' | 'limits'>,
  account: Pick<Account, 'id' | 'plan'>,
  events: number,
  nowUs?: number,
): PreparedAdmission {
  const policies = policiesFor(deps.limits, account.plan);
  const costs = [1, events];
  const keys = policies.map((p) => `${deps.keyPrefix}acctrate:{${account.id}}:${p.name}`);
  const args = policies.flatMap((p, i) => {
    const { intervalUs, toleranceUs } = gcraParams(p);
    return [intervalUs, toleranceUs, costs[i] ?? 0];
  });
  return {
    keys,
    args: [nowUs === undefined ? '' : String(nowUs), ...args],
    decode: (out) => {
      const [allowed, hit, retryAfterUs] = out;
      const items: RateLimitItem[] = policies.map((p, i) => ({
        name: p.name,
        quota: capacityOf(p),
        windowSeconds: p.burstSeconds,
        ...(p.name === 'account_events' ? { unit: 'events' as const } : {}),
        remaining: Number(out[3 + 2 * i]),
        resetSeconds: Math.ceil(Number(out[4 + 2 * i]) / 1_000_000),
      }));
      if (allowed === 1) return { allowed: true, items };
      const index = Math.max(0, Number(hit) - 1);
      const retryAfterSeconds = Math.max(1, Math.ceil(Number(retryAfterUs) / 1_000_000));
      const refusing = items[index] as RateLimitItem;
      return {
        allowed: false,
        hit: refusing.name as AccountRatePolicyName,
        retryAfterSeconds,
        items: [{ ...refusing, resetSeconds: retryAfterSeconds }],
        policy: policies[index] as RatePolicy,
        events,
      };
    },
  };
}

/** One call to Redis per request: both ceilings checked, and charged only if both admit it. */
export function createAccountRateLimiter(deps: AccountRateLimiterDeps) {
  const run = redisScript(ADMIT_ACCOUNT_REQUEST, 'account_rate_limits');
  return async (account: Pick<Account, 'id' | 'plan'>, events: number, nowUs?: number): Promise<AccountRateDecision> => {
    const call = prepareAdmission(deps, account, events, nowUs);
    return call.decode((await run(deps.redis, call.keys, call.args)) as number[]);
  };
}

export type AccountRateLimiter = ReturnType<typeof createAccountRateLimiter>;

function refusal(decision: Extract<AccountRateDecision, { allowed: false }>): ProblemError {
  const { policy, retryAfterSeconds: s } = decision;
  const detail =
    decision.hit === 'account_requests'
      ? `This account is over its ${policy.ratePerSecond} requests a second (bursts up to ${capacityOf(policy)}), counted across all its addresses and keys; retry in ${s} s.`
      : `This account is over its ${policy.ratePerSecond} events a second (bursts up to ${capacityOf(policy)}); this request's ${decision.events} events do not fit now; retry in ${s} s.`;
  return new ProblemError('rateLimited', detail, { headers: { 'retry-after': String(s) }, extensions: { limit: decision.hit } });
}

/**
 * The preHandler hook of the /v1 routes: after authentication, after the body is parsed and its
 * envelope validated (a request over a per-request maximum is its 400 whatever the ceilings say)
 * (so its events can be counted in the same Redis call), before the schema, the allowance and
 * Kafka: a refused request costs the account nothing else. Redis away: served without the
 * ceilings (`failOpen`, RATE_LIMIT_FAIL_OPEN) or 503.
 */
export function accountRateHook(admission: AccountAdmission) {
  return async (request: FastifyRequest): Promise<void> => {
    // Such a route checks its ceilings in the same Redis call as its allowance (admission.ts).
    if (request.routeOptions.config.admitsWithAllowance) return;
    await admission.admit(request);
  };
}

export interface AccountAdmissionOptions {
  failOpen: boolean;
  metrics: Registry;
}

/** What the hook does with a request, in parts a route that checks the ceilings itself reuses. */
export interface AccountAdmission {
  /** Checks the request against its account's ceilings: its RateLimit fields set, the 429 thrown; Redis away: see `unavailable`. */
  admit(request: FastifyRequest): Promise<void>;
  /** Applies a decision: the request's RateLimit fields, and the 429 thrown when it is refused. */
  apply(request: FastifyRequest, decision: AccountRateDecision): void;
  /** Redis could not be asked: undefined when failing open (served without the ceilings), else the 503's error. */
  unavailable(request: FastifyRequest, err: unknown): AppError | undefined;
}

export function accountAdmission(limiter: AccountRateLimiter, options: AccountAdmissionOptions): AccountAdmission {
  const refusals = sharedCounter(options.metrics, {
    name: METRIC_NAMES.accountRateLimitRefusals,
    help: 'Requests refused with 429 by a per-account ceiling',
    labelNames: ['limit'],
  });
  const self: AccountAdmission = {
    async admit(request) {
      const account = request.auth?.account;
      if (!account) return;
      let decision: AccountRateDecision;
      try {
        decision = await limiter(account, countedEvents(request));
      } catch (err) {
        const closed = self.unavailable(request, err);
        if (closed) throw closed;
        return;
      }
      self.apply(request, decision);
    },
    apply(request, decision) {
      request.accountRate = { items: decision.items, refused: !decision.allowed };
      if (decision.allowed) return;
      refusals.inc({ limit: decision.hit });
      throw refusal(decision);
    },
    unavailable(request, err) {
      if (options.failOpen) {
        request.log.debug({ err }, 'account rate limit skipped: Redis unavailable');
        return undefined;
      }
      return new AppError('redis_unavailable', `the account rate limit could not be checked: ${err instanceof Error ? err.message : String(err)}`, {
        retryable: true,
        cause: err,
      });
    },
  };
  return self;
}

/** The events a request counts against the events/s ceiling (its route's `countsEvents`). */
export function countedEvents(request: FastifyRequest): number {
  const counts = request.routeOptions.config.countsEvents;
  return counts === 'one' ? 1 : counts ? eventsIn(request.body) : 0;
}
