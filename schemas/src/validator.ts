import { Ajv, type ValidateFunction } from 'ajv';

/**
 * One Ajv setup for every validator the services build from these schemas (the HTTP routes
 * validate through fastify's own). Decoders of wire records stop at the first error: their
 * reason is one line for a dead letter. Request validators report every error, as the API's
 * `errors[]` does. Nothing is coerced, defaulted or removed: a validator only says yes or no.
 * `strict: false`: TypeBox's own keywords (e.g. `[Kind]`) are not Ajv's.
 */
export type ErrorReporting = 'first' | 'all';

export function createAjv(errors: ErrorReporting): Ajv {
  return new Ajv({ allErrors: errors === 'all', strict: false, discriminator: true, coerceTypes: false, useDefaults: false, removeAdditional: false });
}

/** A validator of `schema` in its own Ajv instance (no `$id` of one schema can clash with another's). */
export function compileValidator<T>(schema: object, errors: ErrorReporting = 'first'): ValidateFunction<T> {
  return createAjv(errors).compile<T>(schema);
}
