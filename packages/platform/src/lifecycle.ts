import type { Logger } from './logger.js';

/** The contract of every long-running part of a service (HTTP server, consumer, ...). */
export interface Component {
  readonly name: string;
  start(): Promise<void>;
  /** Finish or abandon in-flight work without committing unfinished work, then release. */
  stop(): Promise<void>;
  /** Can do its work now (readiness). */
  healthy(): boolean;
  /** While not healthy: what it waits for, with the cause (/readyz lists it); absent: its name. */
  waitingFor?(): string[];
  /**
   * False once the part stopped for good and only a process restart brings it back (liveness:
   * an orchestrator restarts the process). Absent means it cannot die that way.
   */
  alive?(): boolean;
}

/** A client that owns connections (Kafka producer, ClickHouse, Redis) and is closed last. */
export interface Closeable {
  readonly name: string;
  close(): Promise<void>;
}

export interface ServiceRunnerOptions {
  logger: Logger;
  components: Component[];
  clients: Closeable[];
  shutdownTimeoutMs: number;
}

export interface ServiceRunner {
  start(): Promise<void>;
  /** Stops components (all of them, even if one fails), then clients. */
  stop(): Promise<void>;
  healthy(): boolean;
  /** Every component alive (the service's /healthz). */
  alive(): boolean;
  /**
   * SIGTERM/SIGINT stop the service, with a hard deadline that exits even if something hangs;
   * an unhandled rejection or uncaught exception is logged and exits non-zero.
   */
  installSignalHandlers(): void;
}

export function createServiceRunner(options: ServiceRunnerOptions): ServiceRunner {
  const { logger, components, clients, shutdownTimeoutMs } = options;
  let stopping: Promise<void> | undefined;

  async function stopAll(): Promise<void> {
    const stopped = await Promise.allSettled(components.map((c) => c.stop()));
    stopped.forEach((r, i) => {
      if (r.status === 'rejected') logger.error({ err: r.reason, component: components[i]?.name }, 'component failed to stop');
    });
    const closed = await Promise.allSettled(clients.map((c) => c.close()));
    closed.forEach((r, i) => {
      if (r.status === 'rejected') logger.error({ err: r.reason, client: clients[i]?.name }, 'client failed to close');
    });
  }

  const runner: ServiceRunner = {
    async start() {
      for (const c of components) {
        await c.start();
        logger.info({ component: c.name }, 'component started');
      }
    },
    stop() {
      stopping ??= stopAll();
      return stopping;
    },
    healthy: () => components.every((c) => c.healthy()),
    alive: () => components.every((c) => c.alive?.() ?? true),
    installSignalHandlers() {
      installCrashHandlers(logger);
      const onSignal = (signal: NodeJS.Signals) => {
        logger.info({ signal }, 'shutting down');
        const deadline = setTimeout(() => {
          logger.error({ shutdownTimeoutMs }, 'shutdown deadline passed, exiting');
          process.exit(1);
        }, shutdownTimeoutMs);
        deadline.unref();
        runner.stop().then(
          () => process.exit(0),
          (err: unknown) => {
            logger.error({ err }, 'shutdown failed');
            process.exit(1);
          },
        );
      };
      process.once('SIGTERM', onSignal);
      process.once('SIGINT', onSignal);
    },
  };
  return runner;
}

/**
 * A promise rejection nobody handled, or an exception nobody caught, leaves the process in a
 * state no test has seen: log it (fatal) and exit non-zero, so the orchestrator starts a clean
 * one, instead of running on half-broken.
 */
export function installCrashHandlers(logger: Logger, exit: (code: number) => void = (code) => process.exit(code)): void {
  const crash = (kind: string) => (err: unknown) => {
    logger.fatal({ err, kind }, 'crashed: exiting');
    // pino writes synchronously to stdout by default; exit on the next turn all the same.
    setImmediate(() => exit(1));
  };
  process.on('unhandledRejection', crash('unhandledRejection'));
  process.on('uncaughtException', crash('uncaughtException'));
}
