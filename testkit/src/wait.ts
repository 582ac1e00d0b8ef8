export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** Says what was awaited when the deadline passes; a function can say what it last saw. */
  description: string | (() => string);
}

/**
 * Polls until `check` returns a value other than undefined/false, or fails at the deadline with
 * the last value seen. Integration tests use this instead of fixed sleeps.
 */
export async function waitFor<T>(check: () => Promise<T | undefined | false> | T | undefined | false, options: WaitOptions): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== undefined && value !== false) return value;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      const detail = last instanceof Error ? last.message : JSON.stringify(last);
      const description = typeof options.description === 'function' ? options.description() : options.description;
      throw new Error(`timed out waiting for ${description} (last: ${detail})`);
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 200));
  }
}
