import type { FastifyReply } from 'fastify';
import { ProblemError } from '../http/problem.js';
import type { AllowanceState } from '@ingest/domain';

declare module 'fastify' {
  interface FastifyReply {
    /** Set by routes that already know the allowance state, so the hook need not ask Redis. */
    allowanceState?: AllowanceState;
  }
}

/**
 * The allowance as callers see it: they call it the quota (docs/architecture.md, "Names in code
 * and in the API"), so the header and problem names below stay as they are.
 */

/** X-Quota-* headers: the plan's monthly limit, what remains, and when it resets (ISO 8601 UTC). */
export function setAllowanceHeaders(reply: FastifyReply, state: AllowanceState): void {
  reply.header('x-quota-limit', String(state.limit));
  reply.header('x-quota-remaining', String(state.remaining));
  reply.header('x-quota-reset', state.period.end.toISOString());
}

/** The quota-exceeded problem (402), with the allowance's figures as extensions. */
export function allowanceExhausted(state: AllowanceState, detail: string): ProblemError {
  return new ProblemError('quotaExceeded', detail, {
    extensions: { limit: state.limit, used: state.used, remaining: state.remaining, resetsAt: state.period.end.toISOString() },
  });
}
