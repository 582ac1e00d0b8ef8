import { describe, expect, it } from 'vitest';
import { loadConsoleConfig } from './config.js';

describe('console listeners', () => {
  it('listen on loopback by default: the dashboard on 3003, ops on 3103, the admin API on 3200', () => {
    expect(loadConsoleConfig({})).toMatchObject({
      CONSOLE_HOST: '127.0.0.1',
      CONSOLE_PORT: 3003,
      CONSOLE_OPS_HOST: '127.0.0.1',
      CONSOLE_OPS_PORT: 3103,
      ADMIN_HOST: '127.0.0.1',
      ADMIN_PORT: 3200,
    });
  });

  it('keeps the gateway-era names of the shared listener settings, with their rules', () => {
    expect(loadConsoleConfig({ GATEWAY_TRUST_PROXY: '1', RATE_LIMIT_PER_MINUTE: '30' })).toMatchObject({ GATEWAY_TRUST_PROXY: '1', RATE_LIMIT_PER_MINUTE: 30 });
    expect(() => loadConsoleConfig({ GATEWAY_HEADERS_TIMEOUT_MS: '20000', GATEWAY_REQUEST_TIMEOUT_MS: '10000' })).toThrow(/GATEWAY_HEADERS_TIMEOUT_MS/);
  });
});

describe('admin tokens', () => {
  const long = 'x'.repeat(32);

  it.each(['ADMIN_TOKEN', 'ADMIN_TOKEN_PREVIOUS'])('refuses a %s shorter than 32 bytes at start, naming the variable', (name) => {
    expect(() => loadConsoleConfig({ ADMIN_TOKEN: long, [name]: 'y'.repeat(31) })).toThrow(new RegExp(`${name} must be at least 32 bytes \\(it has 31\\)`));
  });

  it('accepts 32 bytes and more, and no token at all (the admin API is off)', () => {
    expect(loadConsoleConfig({ ADMIN_TOKEN: long, ADMIN_TOKEN_PREVIOUS: 'z'.repeat(64) }).ADMIN_TOKEN).toBe(long);
    expect(loadConsoleConfig({}).ADMIN_TOKEN).toBe('');
  });

  it('refuses a previous token without a current one', () => {
    expect(() => loadConsoleConfig({ ADMIN_TOKEN_PREVIOUS: long })).toThrow(/ADMIN_TOKEN_PREVIOUS is set but ADMIN_TOKEN is empty/);
  });
});
