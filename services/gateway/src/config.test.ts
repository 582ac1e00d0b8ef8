import { describe, expect, it } from 'vitest';
import { gatewayDeprecations, loadGatewayConfig } from './config.js';

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

describe('GATEWAY_ROLE, deprecated: the gateway serves the ingestion API only', () => {
  it('accepts ingest (the default) and all for a release, all with a deprecation note', () => {
    expect(loadGatewayConfig({}).GATEWAY_ROLE).toBe('ingest');
    expect(gatewayDeprecations(loadGatewayConfig({}))).toEqual([]);
    expect(gatewayDeprecations(loadGatewayConfig({ GATEWAY_ROLE: 'ingest' }))).toEqual([]);
    expect(gatewayDeprecations(loadGatewayConfig({ GATEWAY_ROLE: 'all' }))).toEqual([expect.stringMatching(/GATEWAY_ROLE=all is deprecated.*console service/)]);
  });

  it('refuses console, pointing to the console service, and an unknown role, naming the variable', () => {
    expect(() => loadGatewayConfig({ GATEWAY_ROLE: 'console' })).toThrow(/GATEWAY_ROLE=console .*the console service now \(SERVICE=console/);
    expect(() => loadGatewayConfig({ GATEWAY_ROLE: 'admin' })).toThrow(/GATEWAY_ROLE/);
  });

  it('refuses a SEEN_IDS_HMAC_KEY shorter than 32 bytes, naming the variable; empty is allowed (a random key per process)', () => {
    expect(() => loadGatewayConfig({ SEEN_IDS_HMAC_KEY: 'too-short' })).toThrow(/SEEN_IDS_HMAC_KEY must be at least 32 bytes/);
    expect(loadGatewayConfig({ SEEN_IDS_HMAC_KEY: 'k'.repeat(32) }).SEEN_IDS_HMAC_KEY).toBe('k'.repeat(32));
    expect(loadGatewayConfig({}).SEEN_IDS_HMAC_KEY).toBe('');
  });
});

describe('per-account ceilings configuration', () => {
  it('refuses an events burst smaller than one POST /v1/events, which no wait could admit', () => {
    expect(() => loadGatewayConfig({ ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_FREE: '9', ACCOUNT_RATE_LIMIT_BURST_SECONDS: '10' })).toThrow(
      /ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_FREE × ACCOUNT_RATE_LIMIT_BURST_SECONDS is 90 events; a burst must hold the 100 events/,
    );
    expect(
      loadGatewayConfig({ ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_FREE: '10', ACCOUNT_RATE_LIMIT_BURST_SECONDS: '10' }).ACCOUNT_RATE_LIMIT_EVENTS_PER_SECOND_FREE,
    ).toBe(10);
  });
});
