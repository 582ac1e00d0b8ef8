/**
 * `ingest healthcheck`: the image's HEALTHCHECK. Asks the running service's ops server for
 * /healthz (liveness: the process works; readiness is /readyz, which orchestrators probe
 * themselves) and exits 0 when it answers 2xx. The image has no curl, hence Node's fetch.
 * Which port to ask follows SERVICE and that service's ops variables; `setup` is a one-shot
 * job with no server, so it is healthy while it runs.
 */
import { type Command, EXIT_FAILED, EXIT_OK, EXIT_USAGE, type Io, parseNoArguments } from './frame.js';

export interface OpsEndpoint {
  hostVariable: string;
  portVariable: string;
  defaultPort: number;
}

/** The ops listener of each long-running service (its config schema holds the same defaults; a test compares). */
export const OPS_ENDPOINTS: Record<string, OpsEndpoint> = {
  gateway: { hostVariable: 'GATEWAY_OPS_HOST', portVariable: 'GATEWAY_OPS_PORT', defaultPort: 3100 },
  console: { hostVariable: 'CONSOLE_OPS_HOST', portVariable: 'CONSOLE_OPS_PORT', defaultPort: 3103 },
  processor: { hostVariable: 'PROCESSOR_OPS_HOST', portVariable: 'PROCESSOR_OPS_PORT', defaultPort: 3101 },
  'crm-sink': { hostVariable: 'CRM_SINK_OPS_HOST', portVariable: 'CRM_SINK_OPS_PORT', defaultPort: 3102 },
};

export type HealthTarget = { kind: 'none'; service: string } | { kind: 'url'; url: string } | { kind: 'error'; message: string };

export function healthTarget(env: Record<string, string | undefined>): HealthTarget {
  const service = env.SERVICE ?? '';
  if (service === 'setup') return { kind: 'none', service };
  const endpoint = OPS_ENDPOINTS[service];
  if (!endpoint) return { kind: 'error', message: `SERVICE must be one of ${Object.keys(OPS_ENDPOINTS).join(', ')} or setup (got "${service}")` };
  const port = Number(env[endpoint.portVariable] ?? endpoint.defaultPort);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) return { kind: 'error', message: `${endpoint.portVariable} is not a port` };
  // A listener on every address (0.0.0.0 or ::, as in containers) answers on loopback.
  const configured = env[endpoint.hostVariable] ?? '127.0.0.1';
  const host = configured === '0.0.0.0' || configured === '::' || configured === '' ? '127.0.0.1' : configured;
  return { kind: 'url', url: `http://${host.includes(':') ? `[${host}]` : host}:${port}/healthz` };
}

export const HEALTHCHECK_COMMAND: Command<'healthcheck'> = {
  usage: 'usage: ingest healthcheck (no arguments; SERVICE and its ops variables pick the port)\n',
  parse: (argv) => parseNoArguments('healthcheck', argv),
  run: (_parsed, io) => runHealthcheck(io.env, io),
};

export async function runHealthcheck(env: Io['env'], io: Pick<Io, 'stdout' | 'stderr'>, timeoutMs = 4000): Promise<number> {
  const target = healthTarget(env);
  if (target.kind === 'error') {
    io.stderr(`healthcheck: ${target.message}\n`);
    return EXIT_USAGE;
  }
  if (target.kind === 'none') {
    io.stdout(`healthcheck: ${target.service} has no server\n`);
    return EXIT_OK;
  }
  try {
    const response = await fetch(target.url, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    io.stdout(`healthcheck: ${target.url} answered ${response.status}\n`);
    return response.ok ? EXIT_OK : EXIT_FAILED;
  } catch (error) {
    io.stderr(`healthcheck: ${target.url} did not answer (${error instanceof Error ? error.message : String(error)})\n`);
    return EXIT_FAILED;
  }
}
