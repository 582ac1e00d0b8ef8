import type { FastifyReply } from 'fastify';
import { ProblemError } from '../http/problem.js';
import type { QuotaState } from '@ingest/domain';

declare module 'fastify' {
  interface FastifyReply {
    /** Set by routes that already know the allowance state, so the hook need not ask Redis. */
    quotaState?: QuotaState;
  }
}

/** X-Quota-* headers: the plan's monthly limit, what remains, and when it resets (ISO 8601 UTC). */
export function setQuotaHeaders(reply: FastifyReply, state: QuotaState): void {
  reply.header('x-quota-limit', String(state.limit));
  reply.header('x-quota-remaining', String(state.remaining));
  reply.header('x-quota-reset', state.period.end.toISOString());
}

export function quotaExceeded(state: QuotaState, detail: string): ProblemError {
  return new ProblemError('quotaExceeded', detail, {
    extensions: { limit: state.limit, used: state.used, remaining: state.remaining, resetsAt: state.period.end.toISOString() },
  });
}
