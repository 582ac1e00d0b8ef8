import { useEffect } from 'react';

/**
 * Calls `load` now and every `intervalMs` while not `paused` (a page followed live); a new `load`
 * (its inputs changed) or resuming loads at once. Pass a `load` from useCallback so the timer is
 * not restarted on every render.
 */
export function usePolling(load: () => Promise<void>, intervalMs: number, paused: boolean): void {
  useEffect(() => {
    void load();
    if (paused) return;
    const timer = window.setInterval(() => void load(), intervalMs);
    return () => window.clearInterval(timer);
  }, [load, intervalMs, paused]);
}
