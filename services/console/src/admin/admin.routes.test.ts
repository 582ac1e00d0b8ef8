import { AppError } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { ProblemError } from '@ingest/http';
import { toProblem } from './control-plane-problem.js';

describe('control plane errors as problems', () => {
  it.each([
    ['account_not_found', 404],
    ['api_key_not_found', 404],
    ['invalid_name', 400],
    ['invalid_plan', 400],
  ])('maps %s to %i', (code, status) => {
    const problem = toProblem(new AppError(code, 'account acc_1 does not exist'));
    expect(problem).toBeInstanceOf(ProblemError);
    expect((problem as ProblemError).status).toBe(status);
  });

  it('points field errors at the body field', () => {
    expect((toProblem(new AppError('invalid_plan', 'plan must be one of free, pro, growth')) as ProblemError).errors).toEqual([
      { field: '/plan', code: 'invalid_value', message: 'plan must be one of free, pro, growth' },
    ]);
    expect((toProblem(new AppError('invalid_name', 'name must be 1 to 200 characters')) as ProblemError).errors?.[0]?.field).toBe('/name');
  });

  it('turns retryable control plane failures into 503 with Retry-After', () => {
    for (const code of ['control_plane_timeout', 'kafka_unavailable']) {
      const problem = toProblem(new AppError(code, 'slow', { retryable: true })) as ProblemError;
      expect(problem.status).toBe(503);
      expect(problem.headers['retry-after']).toBe('1');
    }
  });

  it('leaves other errors to the error handler (500)', () => {
    const bug = new TypeError('boom');
    expect(toProblem(bug)).toBe(bug);
    const unknown = new AppError('something_else', 'x');
    expect(toProblem(unknown)).toBe(unknown);
  });
});
