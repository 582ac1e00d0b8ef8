import { Type } from '@sinclair/typebox';
import { IDEMPOTENCY_KEY_PATTERN } from '@ingest/http';

/**
 * The Idempotency-Key request header, for OpenAPI. Not enforced by the schema (the route checks
 * it, so that a bad key is one clear 400 like every other).
 */
export const idempotencyHeaderSchema = Type.Object({
  'idempotency-key': Type.Optional(
    Type.String({
      pattern: IDEMPOTENCY_KEY_PATTERN,
      description:
        "Makes the request safe to retry: the same key with the same body within 24 hours answers the first request's 202 (same jobId, header Idempotent-Replayed: true) and creates nothing; the same key with another body answers 422.",
    }),
  ),
});
