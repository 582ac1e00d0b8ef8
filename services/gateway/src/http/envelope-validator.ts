import { createAjv } from '@ingest/schemas';
import type { TSchema } from '@sinclair/typebox';
import type { FastifySchemaCompiler } from 'fastify';

const ajv = createAjv('all');

/**
 * A route's `schema.body` documents the full request (arrays of IngestEvent) for OpenAPI; this
 * compiler makes the route validate only the envelope, so each event can be checked on its own
 * and a bad one rejected alone. Errors reach the error handler like any validation error.
 */
export function envelopeValidator(envelope: TSchema): FastifySchemaCompiler<unknown> {
  const validate = ajv.compile(envelope);
  return ({ httpPart }) => {
    if (httpPart !== 'body') return () => true;
    return validate;
  };
}
