import { describe, expect, it } from 'vitest';
import { loadGatewayConfig } from './config.js';

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
