import { MAX_ERRORS_LISTED } from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { BoundedErrors, boundErrors } from './errors-list.js';

describe('bounded error lists', () => {
  it('keeps the first 100 errors and says how many there were', () => {
    const list = new BoundedErrors<number>();
    for (let i = 0; i < 250_000; i++) list.push(i);
    const fields = list.fields();
    expect(fields.errors).toHaveLength(MAX_ERRORS_LISTED);
    expect(fields.errors[0]).toBe(0);
    expect(fields.errors.at(-1)).toBe(99);
    expect(fields).toMatchObject({ errorsTotal: 250_000, errorsTruncated: true });
    expect(list.total).toBe(250_000);
  });

  it('adds no total when nothing was left out', () => {
    const list = new BoundedErrors<string>(3);
    list.push('a', 'b', 'c');
    expect(list.fields()).toEqual({ errors: ['a', 'b', 'c'] });
    list.push('d');
    expect(list.fields()).toEqual({ errors: ['a', 'b', 'c'], errorsTotal: 4, errorsTruncated: true });
  });

  it('cuts an existing list the same way', () => {
    expect(boundErrors([1, 2], 2)).toEqual({ errors: [1, 2] });
    expect(boundErrors([1, 2, 3], 2)).toEqual({ errors: [1, 2], errorsTotal: 3, errorsTruncated: true });
  });
});
