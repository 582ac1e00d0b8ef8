import type { Component, Logger } from '@ingest/platform';

/**
 * A task run every `intervalMs` (from the end of one run to the start of the next, so runs
 * never overlap), as a Component: stop() waits for a run in progress. A failed run is logged
 * and retried at the next interval.
 */
export function createPeriodicTask(options: { name: string; intervalMs: number; logger: Logger; run(): Promise<unknown> }): Component {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<unknown> = Promise.resolve();

  function schedule(): void {
    timer = setTimeout(() => {
      running = options
        .run()
        .catch((err: unknown) => options.logger.warn({ err, task: options.name }, `${options.name} failed; retrying next round`))
        .finally(() => {
          if (timer) schedule();
        });
    }, options.intervalMs);
  }

  return {
    name: options.name,
    async start() {
      schedule();
    },
    async stop() {
      clearTimeout(timer);
      timer = undefined;
      await running;
    },
    // A failed round is retried next time; it does not make the service unready.
    healthy: () => true,
  };
}
