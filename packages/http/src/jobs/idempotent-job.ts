import type { BulkJobReceipt } from '@ingest/schemas';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ProblemError } from '../http/problem.js';
import { IDEMPOTENCY_KEY_PATTERN, type IdempotencyClaim } from './idempotency.store.js';

const KEY_PATTERN = new RegExp(IDEMPOTENCY_KEY_PATTERN);
export const IDEMPOTENCY_HEADER = 'idempotency-key';

/** The request's Idempotency-Key, if it has one; 400 when it is not 1-255 printable ASCII characters. */
export function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const value = request.headers[IDEMPOTENCY_HEADER];
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || !KEY_PATTERN.test(value)) {
    throw new ProblemError('validation', 'The Idempotency-Key header must be 1 to 255 printable ASCII characters.', {
      errors: [{ field: 'Idempotency-Key', code: 'invalid_format', message: 'must be 1 to 255 printable ASCII characters' }],
    });
  }
  return value;
}

/** The original 202 of a repeated request: same job, nothing created or charged again. */
export function replayed(reply: FastifyReply, receipt: BulkJobReceipt): FastifyReply {
  return reply.code(202).header('idempotent-replayed', 'true').send(receipt);
}

/** What a key that was not ours to use means for the caller. */
export function refusedClaim(claim: Exclude<IdempotencyClaim, { kind: 'claimed' | 'replay' }>): ProblemError {
  return claim.kind === 'mismatch'
    ? new ProblemError('idempotencyKeyReused', 'This Idempotency-Key was used in the last 24 hours with a different body; use a new key for a new job.')
    : new ProblemError('idempotencyKeyInUse', 'A request with this Idempotency-Key is still being processed; retry when it has finished.', {
        headers: { 'retry-after': '1' },
      });
}
