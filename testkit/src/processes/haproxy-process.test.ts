/**
 * No servers. The load balancer harness reads HAProxy's stats as HAProxy writes them, and the
 * example configuration users deploy (deploy/haproxy/haproxy.cfg, which the scale tests run) keeps
 * what the harness and the docs rely on: three gateways by environment variable, health from
 * /readyz on the ops port, and an X-Forwarded-For no client can write (the gateways trust one hop,
 * as the Kubernetes ConfigMap sets).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { HAPROXY_CONFIG, parseStatsCsv } from './haproxy-process.js';

const config = readFileSync(join(REPO_ROOT, HAPROXY_CONFIG), 'utf8');
const lines = config.split('\n').map((l) => l.trim());

describe('the HAProxy harness', () => {
  it('reads the stats CSV by column name', () => {
    const rows = parseStatsCsv(
      '# pxname,svname,qcur,status,stot,hrsp_5xx,\ningest,FRONTEND,,OPEN,12,0,\ngateways,gw1,0,UP,5,0,\ngateways,gw2,0,DOWN 1/2,4,1,\n',
    );
    expect(rows.filter((r) => r.pxname === 'gateways').map((r) => [r.svname, r.status, r.stot, r.hrsp_5xx])).toEqual([
      ['gw1', 'UP', '5', '0'],
      ['gw2', 'DOWN 1/2', '4', '1'],
    ]);
  });

  it('runs the example configuration, whose gateways, health checks and X-Forwarded-For are what the docs say', () => {
    for (const n of [1, 2, 3]) expect(lines).toContain(`server gw${n} "\${GATEWAY_${n}}" check port "\${GATEWAY_${n}_OPS_PORT}"`);
    expect(lines).toContain('http-check send meth GET uri /readyz');
    expect(lines).toContain('http-check expect status 200');
    // The client's own header is dropped before HAProxy adds its view of the client.
    const drop = lines.indexOf('http-request del-header X-Forwarded-For');
    expect(drop).toBeGreaterThan(-1);
    expect(lines.indexOf('option forwardfor')).toBeGreaterThan(drop);
    // Only requests that never reached a gateway are re-sent by HAProxy (no retry-on beyond the default).
    expect(lines.some((l) => l.startsWith('retry-on'))).toBe(false);
    expect(readFileSync(join(REPO_ROOT, 'deploy/k8s/10-config.yaml'), 'utf8')).toMatch(/^\s*GATEWAY_TRUST_PROXY: '1'$/m);
  });
});
