import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CrmSinkConfigSchema } from '@ingest/crm-sink/config';
import { ConsoleConfigSchema } from '@ingest/console/config';
import { GatewayConfigSchema } from '@ingest/gateway/config';
import { ProcessorConfigSchema } from '@ingest/processor/config';
import { healthTarget, OPS_ENDPOINTS, runHealthcheck } from './healthcheck.js';

describe('ingest healthcheck', () => {
  let status = 200;
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    server = createServer((req, res) => {
      res.statusCode = req.url === '/healthz' ? status : 404;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const quiet = { stdout: () => undefined, stderr: () => undefined };

  it('uses each service’s own ops variables and defaults', () => {
    const schemas: Record<string, { properties: Record<string, unknown> }> = {
      gateway: GatewayConfigSchema,
      console: ConsoleConfigSchema,
      processor: ProcessorConfigSchema,
      'crm-sink': CrmSinkConfigSchema,
    };
    for (const [service, e] of Object.entries(OPS_ENDPOINTS)) {
      const props = schemas[service]?.properties as Record<string, { default?: unknown }>;
      expect(props[e.portVariable]?.default, service).toBe(e.defaultPort);
      expect(props[e.hostVariable], service).toBeDefined();
    }
  });

  it('asks loopback when the listener is on every address, and names a bad SERVICE', () => {
    expect(healthTarget({ SERVICE: 'processor', PROCESSOR_OPS_HOST: '0.0.0.0' })).toEqual({ kind: 'url', url: 'http://127.0.0.1:3101/healthz' });
    expect(healthTarget({ SERVICE: 'crm-sink', CRM_SINK_OPS_PORT: '4000', CRM_SINK_OPS_HOST: '::' })).toEqual({
      kind: 'url',
      url: 'http://127.0.0.1:4000/healthz',
    });
    expect(healthTarget({ SERVICE: 'setup' })).toEqual({ kind: 'none', service: 'setup' });
    expect(healthTarget({ SERVICE: 'gatway' })).toMatchObject({ kind: 'error', message: expect.stringContaining('gatway') });
    expect(healthTarget({ SERVICE: 'gateway', GATEWAY_OPS_PORT: 'x' })).toMatchObject({ kind: 'error' });
  });

  it('exits 0 on a 2xx /healthz, 1 on another status or no answer', async () => {
    const env = { SERVICE: 'gateway', GATEWAY_OPS_PORT: String(port) };
    status = 200;
    expect(await runHealthcheck(env, quiet)).toBe(0);
    status = 503;
    expect(await runHealthcheck(env, quiet)).toBe(1);
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    expect(await runHealthcheck({ SERVICE: 'gateway', GATEWAY_OPS_PORT: String(closedPort) }, quiet)).toBe(1);
  });
});
