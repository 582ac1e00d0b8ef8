import { AppError } from '@ingest/platform';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import { type FieldError, PROBLEM_CONTENT_TYPE, ProblemError, type ProblemKind, problemBody } from './problem.js';

interface AjvLikeError {
  instancePath: string;
  keyword: string;
  params: Record<string, unknown>;
  message?: string;
}

/** ajv keyword -> our stable error code. */
const KEYWORD_CODES: Record<string, string> = {
  required: 'required',
  type: 'invalid_type',
  maxLength: 'too_long',
  minLength: 'too_short',
  maxItems: 'too_many_items',
  minItems: 'too_few_items',
  maxProperties: 'too_many_keys',
  additionalProperties: 'unknown_field',
  format: 'invalid_format',
  pattern: 'invalid_format',
  enum: 'invalid_value',
  const: 'invalid_value',
};

export function ajvErrorsToFieldErrors(errors: readonly AjvLikeError[], prefix = ''): FieldError[] {
  return errors.map((e) => {
    let field = `${prefix}${e.instancePath}`;
    if (e.keyword === 'required') field += `/${String(e.params.missingProperty)}`;
    if (e.keyword === 'additionalProperties') field += `/${String(e.params.additionalProperty)}`;
    return { field: field || '/', code: KEYWORD_CODES[e.keyword] ?? 'invalid', message: e.message ?? 'is invalid' };
  });
}

/** Fastify's own errors, by code, to our problem kinds. */
const FASTIFY_CODES: Record<string, ProblemKind> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'payloadTooLarge',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupportedMediaType',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'validation',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalidJson',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalidJson',
  FST_ERR_BAD_URL: 'notFound',
  FST_ERR_NOT_FOUND: 'notFound',
  FST_REQ_FILE_TOO_LARGE: 'payloadTooLarge',
  FST_PARTS_LIMIT: 'payloadTooLarge',
  FST_FILES_LIMIT: 'validation',
  FST_INVALID_MULTIPART_CONTENT_TYPE: 'unsupportedMediaType',
};

export function sendProblem(reply: FastifyReply, error: ProblemError): FastifyReply {
  for (const [name, value] of Object.entries(error.headers)) reply.header(name, value);
  return reply
    .code(error.status)
    .type(PROBLEM_CONTENT_TYPE)
    .send(
      problemBody(error.kind, error.detail, String(reply.request.id), { errors: error.errors, errorsTotal: error.errorsTotal, extensions: error.extensions }),
    );
}

/**
 * One handler turns every error into problem+json; 5xx never leak internals. `notFoundPreHandler`
 * lets the rate limiter count requests to unknown routes too.
 */
export function registerErrorHandling(app: FastifyInstance, notFoundPreHandler?: preHandlerAsyncHookHandler): void {
  app.setErrorHandler((error: FastifyError | ProblemError | AppError, request: FastifyRequest, reply: FastifyReply) => {
    const problem = toProblem(error);
    if (problem.status >= 500) request.log.error({ err: error }, 'request failed');
    else request.log.warn({ status: problem.status, problem: problem.kind, detail: problem.detail }, 'request refused');
    return sendProblem(reply, problem);
  });

  app.setNotFoundHandler({ preHandler: notFoundPreHandler }, (request, reply) => {
    return sendProblem(reply, new ProblemError('notFound', `No route for ${request.method} ${request.url.split('?')[0]}.`));
  });
}

function toProblem(error: FastifyError | ProblemError | AppError): ProblemError {
  if (error instanceof ProblemError) return error;
  if (error instanceof AppError) {
    // A write that may or may not have landed: never a 503, which promises nothing was done.
    if (error.code === 'kafka_outcome_unknown') {
      return new ProblemError(
        'outcomeUnknown',
        'Kafka did not answer in time; the change may have been made. Check, or retry (the same request is safe to repeat).',
        {
          cause: error,
        },
      );
    }
    // A dependency that is down (Kafka, Redis): the caller should retry, nothing was done.
    if (error.retryable) {
      return new ProblemError('unavailable', 'A dependency is temporarily unavailable; nothing was done. Retry shortly.', {
        headers: { 'retry-after': '5' },
        cause: error,
      });
    }
    return new ProblemError('internal', 'An internal error occurred; it has been logged with this requestId.', { cause: error });
  }
  if (error.validation) {
    const context = error.validationContext === 'body' ? '' : `/${error.validationContext ?? ''}`;
    return new ProblemError('validation', `The request ${error.validationContext ?? 'body'} is invalid: ${error.message}`, {
      errors: ajvErrorsToFieldErrors(error.validation as AjvLikeError[], context),
    });
  }
  const kind = error.code ? FASTIFY_CODES[error.code] : undefined;
  if (kind) return new ProblemError(kind, error.message);
  // Other 4xx from plugins carry a sensible message; anything else is ours to hide.
  if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) {
    return new ProblemError(error.statusCode === 429 ? 'rateLimited' : 'validation', error.message);
  }
  return new ProblemError('internal', 'An internal error occurred; it has been logged with this requestId.', { cause: error });
}
