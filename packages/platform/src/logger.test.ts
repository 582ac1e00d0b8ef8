import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(JSON.parse(String(chunk)));
      cb();
    },
  });
  return { lines, destination };
}

describe('createLogger', () => {
  it('redacts authorization headers and api keys', () => {
    const { lines, destination } = capture();
    const logger = createLogger({ service: 'test', destination });
    logger.info({ req: { headers: { authorization: 'Bearer svc_live_secret', 'user-agent': 'x' } }, apiKey: 'svc_live_secret' }, 'request');
    expect(JSON.stringify(lines[0])).not.toContain('svc_live_secret');
    expect(lines[0]).toMatchObject({ service: 'test', level: 'info', msg: 'request', req: { headers: { authorization: '[redacted]', 'user-agent': 'x' } } });
  });

  it('redacts CRM credential secrets, bare or inside a stored credential', () => {
    const { lines, destination } = capture();
    const logger = createLogger({ service: 'test', destination });
    logger.info({ credential: { type: 'hubspot', accessToken: 'pat-na1-topsecret' } }, 'a');
    logger.info({ stored: { name: 'main', credential: { type: 'webhook', secret: 'whsec_topsecret', url: 'https://x.test' } } }, 'b');
    logger.info({ accessToken: 'pat-na1-topsecret', secret: 'whsec_topsecret' }, 'c');
    expect(JSON.stringify(lines)).not.toMatch(/topsecret/);
    expect(lines[1]).toMatchObject({ stored: { name: 'main', credential: { type: 'webhook', secret: '[redacted]', url: 'https://x.test' } } });
  });
});
