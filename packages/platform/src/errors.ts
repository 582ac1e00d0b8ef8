/**
 * Errors that cross module boundaries carry a stable machine-readable `code` and say whether
 * retrying can help. Callers classify by `code`, never by message text.
 */
export class AppError extends Error {
  readonly code: string;
  readonly retryable: boolean;

  constructor(code: string, message: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.retryable = options.retryable ?? false;
  }
}

export function isRetryable(err: unknown): boolean {
  return err instanceof AppError && err.retryable;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
