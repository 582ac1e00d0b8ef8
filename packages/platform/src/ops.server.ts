import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Component } from './lifecycle.js';
import type { Logger } from './logger.js';
import type { Registry } from './metrics.js';

export interface OpsServerOptions {
  host: string;
  port: number;
  metrics: Registry;
  /**
   * What the service waits for before it can do its work (empty: ready), e.g. `control plane
   * caught up`, `dedupe-consumer`. /readyz lists it, so whoever looks sees which part holds it.
   */
  waitingFor: () => string[];
  /**
   * What still works but with less margin than it should (e.g. `kafka-brokers: 2 of 3 live …`):
   * /readyz stays 200 and lists it as `degraded`, so a load balancer keeps the service and a
   * person who looks sees the cause. Default: nothing.
   */
  degraded?: () => string[];
  /**
   * Alive means: no part stopped for good (a consumer that cannot rejoin, a stale control plane).
   * False makes /healthz answer 503 so the orchestrator restarts the process. Default: always.
   */
  live?: () => boolean;
  logger: Logger;
}

export interface OpsServer extends Component {
  address(): string;
}

/**
 * /healthz (the process answers and none of its parts stopped for good), /readyz (it can do its
 * work) and /metrics for services that
 * have no HTTP API of their own. Three fixed routes do not justify a web framework here.
 */
/** The components that are not healthy, by name: what a service waits for by default. */
export function unhealthy(components: readonly Component[]): string[] {
  return components.filter((c) => !c.healthy()).flatMap((c) => c.waitingFor?.() ?? [c.name]);
}

/** The named conditions that do not hold (`{ 'control plane caught up': () => ... }`), then the unhealthy components. */
export function waitingFor(conditions: Record<string, () => boolean>, components: readonly Component[]): string[] {
  return [
    ...Object.entries(conditions)
      .filter(([, holds]) => !holds())
      .map(([name]) => name),
    ...unhealthy(components),
  ];
}

export function createOpsServer(options: OpsServerOptions): OpsServer {
  let server: Server | undefined;
  return {
    name: 'ops-server',
    async start() {
      server = createServer((req, res) => {
        const path = (req.url ?? '/').split('?')[0];
        if (req.method !== 'GET') {
          res.writeHead(405, { allow: 'GET' }).end();
          return;
        }
        if (path === '/healthz') {
          const alive = options.live?.() ?? true;
          res.writeHead(alive ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: alive ? 'ok' : 'dead' }));
        } else if (path === '/readyz') {
          const waitingFor = options.waitingFor();
          const degraded = options.degraded?.() ?? [];
          const body = {
            ...(waitingFor.length === 0 ? { status: 'ready' } : { status: 'not_ready', waitingFor }),
            ...(degraded.length > 0 ? { degraded } : {}),
          };
          res.writeHead(waitingFor.length === 0 ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify(body));
        } else if (path === '/metrics') {
          options.metrics.metrics().then(
            (text) => res.writeHead(200, { 'content-type': options.metrics.contentType }).end(text),
            (err: unknown) => {
              options.logger.error({ err }, 'metrics collection failed');
              res.writeHead(500).end();
            },
          );
        } else {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"status":"not_found"}');
        }
      });
      await new Promise<void>((resolve, reject) => {
        server?.once('error', reject);
        server?.listen(options.port, options.host, () => resolve());
      });
    },
    async stop() {
      await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    },
    healthy: () => server?.listening ?? false,
    address() {
      const addr = server?.address() as AddressInfo | null;
      return addr ? `http://${addr.address}:${addr.port}` : '';
    },
  };
}
