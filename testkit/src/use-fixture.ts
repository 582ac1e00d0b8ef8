/**
 * Fixtures whose lifetime is the test file's: created in `beforeAll`, cleaned up in `afterAll`,
 * both registered by the call itself, so a test file cannot forget the cleanup. Call at the top
 * level (or in a describe block); use the value only inside tests and hooks.
 */
import { afterAll, beforeAll } from 'vitest';

export function useFixture<T extends object>(create: () => Promise<T>, dispose: (value: T) => Promise<void>): T {
  let value: T | undefined;
  beforeAll(async () => {
    value = await create();
  });
  afterAll(async () => {
    if (value !== undefined) await dispose(value);
  });
  return new Proxy({} as T, {
    get(_, property) {
      if (value === undefined) throw new Error(`fixture used before its beforeAll ran (reading ${String(property)})`);
      const field: unknown = Reflect.get(value, property);
      return typeof field === 'function' ? (field as (...args: unknown[]) => unknown).bind(value) : field;
    },
  });
}
