import { MAX_ERRORS_LISTED } from '@ingest/schemas';

/** An `errors[]` as the API sends it: the first entries, and how many there were when cut. */
export type BoundedErrorFields<T> = { errors: T[]; errorsTotal?: number; errorsTruncated?: true };

/**
 * Collects errors while keeping only the first `max` (docs/api.md: error lists are bounded): the
 * memory and the answer stay the same size whatever the caller sent, and the total is still
 * known. A header of 200,000 empty columns was answered with 18.6 MB before this.
 */
export class BoundedErrors<T> {
  private readonly kept: T[] = [];
  private count = 0;

  constructor(private readonly max: number = MAX_ERRORS_LISTED) {}

  push(...errors: T[]): void {
    for (const error of errors) {
      this.count += 1;
      if (this.kept.length < this.max) this.kept.push(error);
    }
  }

  get total(): number {
    return this.count;
  }

  get items(): readonly T[] {
    return this.kept;
  }

  /** `{ errors }`, plus `errorsTotal` and `errorsTruncated: true` when some were left out. */
  fields(): BoundedErrorFields<T> {
    return this.count > this.kept.length ? { errors: [...this.kept], errorsTotal: this.count, errorsTruncated: true } : { errors: [...this.kept] };
  }
}

/** The same for a list that already exists: its first `max` entries and the total when cut. */
export function boundErrors<T>(errors: readonly T[], max: number = MAX_ERRORS_LISTED): BoundedErrorFields<T> {
  return errors.length > max ? { errors: errors.slice(0, max), errorsTotal: errors.length, errorsTruncated: true } : { errors: [...errors] };
}
