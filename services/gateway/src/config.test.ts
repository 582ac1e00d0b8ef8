import { describe, expect, it } from 'vitest';
import { gatewayServes, loadGatewayConfig } from './config.js';

describe('gateway timeouts configuration', () => {
  it('has the documented defaults', () => {
    expect(loadGatewayConfig({})).toMatchObject({
      GATEWAY_REQUEST_TIMEOUT_MS: 300_000,
      GATEWAY_HEADERS_TIMEOUT_MS: 10_000,
      GATEWAY_BODY_IDLE_TIMEOUT_MS: 15_000,
      GATEWAY_KEEP_ALIVE_TIMEOUT_MS: 72_000,
    });
  });

  it('refuses a headers timeout above the request timeout (Node would refuse to start)', () => {
    expect(() => loadGatewayConfig({ GATEWAY_HEADERS_TIMEOUT_MS: '20000', GATEWAY_REQUEST_TIMEOUT_MS: '10000' })).toThrow(/GATEWAY_HEADERS_TIMEOUT_MS/);
  });

  it('refuses a body-idle timeout that a slow Kafka acknowledgement could reach', () => {
    expect(() => loadGatewayConfig({ GATEWAY_BODY_IDLE_TIMEOUT_MS: '5000', KAFKA_SEND_TIMEOUT_MS: '5000' })).toThrow(
      /GATEWAY_BODY_IDLE_TIMEOUT_MS must exceed KAFKA_SEND_TIMEOUT_MS/,
    );
  });
});

describe('admin tokens', () => {
  const long = 'x'.repeat(32);

  it.each(['ADMIN_TOKEN', 'ADMIN_TOKEN_PREVIOUS'])('refuses a %s shorter than 32 bytes at start, naming the variable', (name) => {
    expect(() => loadGatewayConfig({ ADMIN_TOKEN: long, [name]: 'y'.repeat(31) })).toThrow(new RegExp(`${name} must be at least 32 bytes \\(it has 31\\)`));
  });

  it('accepts 32 bytes and more, and no token at all (the admin API is off)', () => {
    expect(loadGatewayConfig({ ADMIN_TOKEN: long, ADMIN_TOKEN_PREVIOUS: 'z'.repeat(64) }).ADMIN_TOKEN).toBe(long);
    expect(loadGatewayConfig({}).ADMIN_TOKEN).toBe('');
  });

  it('refuses a previous token without a current one', () => {
    expect(() => loadGatewayConfig({ ADMIN_TOKEN_PREVIOUS: long })).toThrow(/ADMIN_TOKEN_PREVIOUS is set but ADMIN_TOKEN is empty/);
  });
});

describe('gateway roles', () => {
  it('serves both surfaces by default; ingest only /v1; console only the dashboard and the admin API', () => {
    expect(loadGatewayConfig({}).GATEWAY_ROLE).toBe('all');
    expect(gatewayServes('all')).toEqual({ api: true, console: true });
    expect(gatewayServes('ingest')).toEqual({ api: true, console: false });
    expect(gatewayServes('console')).toEqual({ api: false, console: true });
  });

  it('refuses an unknown role, and an admin token on an ingest gateway, naming the variables', () => {
    expect(() => loadGatewayConfig({ GATEWAY_ROLE: 'admin' })).toThrow(/GATEWAY_ROLE/);
    expect(() => loadGatewayConfig({ GATEWAY_ROLE: 'ingest', ADMIN_TOKEN: 'x'.repeat(32) })).toThrow(/ADMIN_TOKEN is set but GATEWAY_ROLE=ingest/);
    expect(loadGatewayConfig({ GATEWAY_ROLE: 'console', ADMIN_TOKEN: 'x'.repeat(32) }).GATEWAY_ROLE).toBe('console');
  });
});
