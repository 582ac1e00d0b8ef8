import type { FastifyInstance } from 'fastify';
import sjson from 'secure-json-parse';
import { ProblemError } from './problem.js';

/**
 * application/json is the only body type of the JSON routes (everything else is 415, instead
 * of fastify's text/plain fallback reaching the handler). Parsing refuses prototype-poisoning
 * keys and says precisely what was wrong, with the position JSON.parse reports.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, parseJsonBody);
}

/**
 * The JSON parsing of registerJsonBodyParser, for a scope that must also read JSON sent under
 * another type (Segment's browser SDK posts JSON as text/plain to skip the CORS preflight).
 */
export function parseJsonBody(_req: unknown, body: Buffer, done: (err: Error | null, body?: unknown) => void): void {
  if (body.length === 0) {
    done(new ProblemError('invalidJson', 'The body is empty; send a JSON object.'), undefined);
    return;
  }
  try {
    done(null, sjson.parse(body, undefined, { protoAction: 'error', constructorAction: 'error' }));
  } catch (err) {
    if (err instanceof SyntaxError && !/forbidden prototype property/i.test(err.message)) {
      done(new ProblemError('invalidJson', `The body is not valid JSON: ${err.message}`), undefined);
    } else {
      done(
        new ProblemError('validation', 'The body contains a key that is not allowed (__proto__ or constructor.prototype).', {
          errors: [{ code: 'forbidden_key', message: 'keys named __proto__, or constructor with a prototype member, are refused' }],
        }),
        undefined,
      );
    }
  }
}
