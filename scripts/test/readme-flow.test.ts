import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { codeBlockAfter, dashboardPages, joinContinuations, missingShownPairs, parsePrintout, printoutDrift, shellSteps } from './readme-flow.js';

const PRINTOUT = `==> demo account

Running:
  Kafka       127.0.0.1:9092
  ClickHouse  http://127.0.0.1:8123   (database ingest)
  gateway     http://127.0.0.1:3000   (API; OpenAPI at /v1/openapi.json, docs at /docs)
  console     http://127.0.0.1:3003/dashboard/   (dashboard)
  console     admin http://127.0.0.1:3200  (admin API, loopback only)

Demo account acc_1 (plan pro), API key:
  svc_live_abc
Try it:
  curl -s http://127.0.0.1:3000/v1/events -H 'Authorization: Bearer svc_live_abc' \\
    -d '{"events":[]}'
  curl -s 'http://127.0.0.1:8123/?query=SELECT+1'
Dashboard (API keys, usage):
  http://127.0.0.1:3003/dashboard/
  email    demo+x@example.com
  password p-w
Admin CLI (token in .local/admin-token):
  ADMIN_TOKEN=$(cat .local/admin-token) npm run admin -- accounts list

Services run in the background.`;

describe("the README flow's parsers", () => {
  it('reads the addresses, the demo account and every command from the printout', () => {
    const p = parsePrintout(PRINTOUT);
    expect(p).toMatchObject({
      gatewayUrl: 'http://127.0.0.1:3000',
      consoleUrl: 'http://127.0.0.1:3003/dashboard/',
      adminUrl: 'http://127.0.0.1:3200',
      clickhouseUrl: 'http://127.0.0.1:8123',
      database: 'ingest',
      accountId: 'acc_1',
      apiKey: 'svc_live_abc',
      dashboardUrl: 'http://127.0.0.1:3003/dashboard/',
      email: 'demo+x@example.com',
      password: 'p-w',
      adminCommand: 'ADMIN_TOKEN=$(cat .local/admin-token) npm run admin -- accounts list',
    });
    expect(p.tryIt).toEqual([
      `curl -s http://127.0.0.1:3000/v1/events -H 'Authorization: Bearer svc_live_abc' -d '{"events":[]}'`,
      `curl -s 'http://127.0.0.1:8123/?query=SELECT+1'`,
    ]);
    expect(p.lines[0]).toBe('Running:');
    expect(p.lines.at(-1)).toContain('accounts list');
  });

  it('fails naming what the printout lacks', () => {
    expect(() => parsePrintout('kafka: ERROR: broker did not start')).toThrow(/no summary/);
  });

  it('joins shell continuations', () => {
    expect(joinContinuations(['a \\', '  b \\', '  c', '', 'd'])).toEqual(['a b c', 'd']);
  });

  it('matches README lines with … as a wildcard, and names a line only one side has', () => {
    expect(printoutDrift(['Demo account acc_… (plan pro)', '  key   svc_…'], ['Demo account acc_1 (plan pro)', '  key svc_abc'])).toEqual([]);
    expect(printoutDrift(['a', 'c'], ['a', 'b', 'c'])).toEqual(['npm start prints a line the README does not show: "b"']);
    expect(printoutDrift(['a', 'b', 'c'], ['a', 'c'])).toEqual(['the README shows a line npm start does not print: "b"']);
    expect(printoutDrift(['a (x)'], ['a (y)'])).toEqual(['README "a (x)" but npm start prints "a (y)"']);
  });

  it('splits a README shell block into the variables to set and the commands with their shown output', () => {
    const block = [
      'KEY=svc_live_...   # printed by npm start',
      'curl -s localhost:3000/v1/events -H "Authorization: Bearer $KEY" \\',
      "  -d '{}'",
      '# {"accepted":1}',
      '# a remark',
      'EVENT_ID=0193…',
      'curl -s localhost:3000/v1/events/$EVENT_ID',
    ];
    expect(shellSteps(block)).toEqual([
      { kind: 'set', name: 'KEY' },
      { kind: 'run', command: `curl -s localhost:3000/v1/events -H "Authorization: Bearer $KEY" -d '{}'`, shown: '{"accepted":1}' },
      { kind: 'set', name: 'EVENT_ID' },
      { kind: 'run', command: 'curl -s localhost:3000/v1/events/$EVENT_ID' },
    ]);
  });

  it('checks the literal pairs of a shown output, and only the keys of elided ones', () => {
    const shown = '{"accepted":1,"rejected":0,"requestId":"…","eventIds":["0193…"],"properties":{"plan":"pro"}}';
    expect(missingShownPairs(shown, '{"accepted":1,"rejected":0,"requestId":"r","eventIds":["x"],"properties":{"plan":"pro"}}')).toEqual([]);
    expect(missingShownPairs(shown, '{"accepted":0,"rejected":0,"properties":{"plan":"free"}}')).toEqual([
      '"accepted":1',
      '"requestId":…',
      '"eventIds":…',
      '"plan":"pro"',
    ]);
  });

  it("finds the code block after a heading, and the dashboard's pages in App.tsx", () => {
    expect(codeBlockAfter('# x\n## Sending an event\ntext\n```bash\nA=1\n```\n', '## Sending an event')).toEqual(['A=1']);
    expect(dashboardPages("const PAGES = [\n  { path: 'keys', label: 'API keys' },\n  { path: 'x', label: 'X', soon: true },\n] as const;")).toEqual(['keys']);
    const app = readFileSync(new URL('../../services/console/web/src/App.tsx', import.meta.url), 'utf8');
    expect(dashboardPages(app)).toContain('usage');
  });
});
