/**
 * Everything the bench starts or creates registers how to undo it here. The actions run in
 * reverse order, once, on success, on failure and on Ctrl-C/SIGTERM; each is bounded so a
 * hung server cannot keep the bench from exiting.
 */
import { say } from './say.js';

type Action = { name: string; run: () => Promise<void> | void; timeoutMs: number };

export interface Cleanup {
  /** `timeoutMs` bounds this action (default 30 s). */
  add(name: string, run: () => Promise<void> | void, timeoutMs?: number): void;
  run(): Promise<void>;
  /** Aborted on the first SIGINT/SIGTERM: phases stop early and the bench cleans up. */
  readonly signal: AbortSignal;
}

const ACTION_TIMEOUT_MS = 30_000;

export function createCleanup(): Cleanup {
  const actions: Action[] = [];
  const controller = new AbortController();
  let running: Promise<void> | undefined;
  let signals = 0;

  async function runAll(): Promise<void> {
    for (const action of actions.reverse()) {
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`timed out after ${action.timeoutMs} ms`)), action.timeoutMs);
      });
      try {
        await Promise.race([Promise.resolve().then(action.run), timeout]);
      } catch (err) {
        say('cleanup', `${action.name} failed: ${(err as Error).message}`);
      } finally {
        clearTimeout(timer);
      }
    }
    actions.length = 0;
  }

  const onSignal = (sig: NodeJS.Signals) => {
    signals++;
    if (signals === 1) {
      say('bench', `${sig}: stopping the load and cleaning up (Ctrl-C twice more abandons the cleanup)`);
      controller.abort(new Error(`interrupted by ${sig}`));
    } else if (signals === 2) {
      say('bench', 'still cleaning up; one more Ctrl-C exits at once and may leave processes, topics and the database behind');
    } else {
      process.exit(130);
    }
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  return {
    signal: controller.signal,
    add(name, run, timeoutMs = ACTION_TIMEOUT_MS) {
      actions.push({ name, run, timeoutMs });
    },
    run() {
      running ??= runAll();
      return running;
    },
  };
}
