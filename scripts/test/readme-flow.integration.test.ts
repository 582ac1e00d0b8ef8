/**
 * Real servers: Kafka, ClickHouse, Redis (the stack npm test runs), and the real `npm start`:
 * scripts/start.sh with its services as OS processes. The README's flow as a newcomer follows it
 * (issue 23): `npm start -- --detach`, then every command its printout and the README's "Sending
 * an event" section offer, as printed: the sends (202), reading the events back (200 with their
 * fields), the ClickHouse query (the rows), dashboard sign-in with the printed credentials and
 * every page of the dashboard with its data, the admin CLI (lists the demo account); then
 * `npm run stop`. Commands are taken from the real printout and README.md, so the test breaks
 * when either drifts; the README's block of what `npm start` prints must match it line for line.
 *
 * The one liberty: the run is isolated by environment variables that start.sh and the services
 * read (docs/configuration.md), so it collides neither with a developer's `npm start` nor with
 * other test files: its own STACK_DIR (pid files, logs, demo account, admin token), free ports,
 * topic prefix, database, Redis key prefix and consumer groups. The Kafka jar cache of the
 * repository's stack is linked in (the running broker is reused; the jars serve its metadata
 * check). The README's `localhost:3000` is replaced by the gateway's printed address. Pages are
 * loaded over HTTP with the session cookie (each page's HTML, its scripts and every data API
 * it calls on load), as the dashboard's plain-HTTP tests do; the browser project drives them.
 */
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { allTopicSpecs, createKafkaClient, createLogger, createRedis, deleteTopics, dropDatabase, REPO_ROOT } from '@ingest/platform';
import { assertProjectNode, freePort, integrationEnv, uniqueSuffix } from '@ingest/testkit';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { codeBlockAfter, dashboardPages, missingShownPairs, parsePrintout, type Printout, printoutDrift, shellSteps } from './readme-flow.js';
import { livePids, run, stopProcessGroups } from './run-command.js';

const servers = integrationEnv();
const id = `readme${uniqueSuffix()}`;
const stackDir = join(REPO_ROOT, '.local/test-artifacts/readme-flow', id);
const runDir = join(stackDir, 'run');
const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
/** The README shows the default ports; the run gets free ones. */
const DEFAULT_PORTS = {
  GATEWAY_PORT: 3000,
  CONSOLE_PORT: 3003,
  ADMIN_PORT: 3200,
  GATEWAY_OPS_PORT: 3100,
  CONSOLE_OPS_PORT: 3103,
  PROCESSOR_OPS_PORT: 3101,
  CRM_SINK_OPS_PORT: 3102,
};
const ports: Record<string, number> = {};
/**
 * What each dashboard page (services/console/web/src/App.tsx) asks its API for when it opens
 * (services/console/web/src/pages). A page added to the app fails the test until listed here.
 */
const PAGE_DATA: Record<string, string[]> = {
  keys: ['/keys'],
  usage: ['/usage'],
  jobs: ['/jobs'],
  mappings: ['/mapping', '/mapping/versions'],
  events: ['/events', '/deadletters'],
  activity: ['/audit'],
  connections: ['/connections'],
  'sync-health': ['/sync-health'],
  security: ['/totp'],
};
let env: NodeJS.ProcessEnv = {};
let printed: Printout | undefined;
const sentIds: string[] = [];
let failed = false;

function isolatedEnv(): NodeJS.ProcessEnv {
  // A user's shell: none of the test runner's variables, nor settings that would replace what start.sh chooses.
  const base = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !/^(VITEST|NODE_ENV$|ADMIN_TOKEN|ADMIN_URL$|STACK_KAFKA_SECURITY$|GATEWAY_CLICKHOUSE_)/.test(k)),
  );
  return {
    ...base,
    STACK_DIR: stackDir,
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
    KAFKA_TOPIC_PREFIX: `${id}.`,
    CLICKHOUSE_DATABASE: id,
    REDIS_KEY_PREFIX: `${id}:`,
    PROCESSOR_STORAGE_GROUP: `${id}-storage`,
    PROCESSOR_DEDUPE_GROUP: `${id}-dedupe`,
    PROCESSOR_JOBS_GROUP: `${id}-jobs`,
    PROCESSOR_LEDGER_GROUP: `${id}-ledger`,
    PROCESSOR_AUDIT_GROUP: `${id}-audit`,
    CRM_SINK_GROUP: `${id}-crm-sink`,
  };
}

const the = (): Printout => printed ?? expect.fail('npm start did not print its summary (see the first test)');

interface ShellResult {
  status: string;
  body: string;
  /** Everything, for failure messages. */
  output: string;
}

/** A printed or README command in bash, as a user pastes it; a curl also reports its HTTP status. */
async function shell(command: string, extraEnv: Record<string, string> = {}): Promise<ShellResult> {
  const curl = command.startsWith('curl ');
  const result = await run('bash', ['-c', curl ? `${command} -w '\\n%{http_code}'` : command], { env: { ...env, ...extraEnv }, timeoutMs: 30_000 });
  const lines = result.stdout.replace(/\n$/, '').split('\n');
  const status = curl ? (lines.pop() ?? '') : String(result.code);
  return { status, body: lines.join('\n'), output: `$ ${command}\nexit ${result.code}\n${result.stdout}${result.stderr}` };
}

/**
 * Repeats `attempt` while `pending` holds (the answer of a state not reached yet), up to 30 s, and
 * returns the first other answer; fails with the last output seen at the deadline.
 */
async function eventually(what: string, attempt: () => Promise<ShellResult>, pending: (r: ShellResult) => boolean): Promise<ShellResult> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const result = await attempt();
    if (!pending(result)) return result;
    if (Date.now() > deadline) return expect.fail(`timed out waiting for ${what}; last:\n${result.output}`);
    await new Promise((r) => setTimeout(r, 300));
  }
}

beforeEach(({ onTestFailed }) => onTestFailed(() => void (failed = true)));

afterAll(async () => {
  // Always stop what the flow started, also when a step failed: `npm run stop`, then whatever its pid files still name.
  if (livePids(runDir).length > 0) await run('npm', ['run', 'stop'], { env, timeoutMs: 60_000 }).catch(() => undefined);
  stopProcessGroups(runDir);
  const logger = createLogger({ service: 'readme-flow-cleanup', level: 'silent' });
  const kafka = createKafkaClient({ brokers: servers.kafkaBrokers, clientId: `${id}-cleanup`, driver: servers.kafkaDriver, logger });
  const redis = createRedis({ url: servers.redisUrl, logger });
  const cleanup = await Promise.allSettled([
    deleteTopics(
      kafka,
      allTopicSpecs().map((s) => `${id}.${s.name}`),
    ),
    dropDatabase({ url: servers.clickhouseUrl, username: servers.clickhouseUser, password: servers.clickhousePassword, database: id }),
    (async () => {
      if (redis.status === 'wait') await redis.connect();
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${id}:*`, 'COUNT', 1000);
        if (keys.length > 0) await redis.del(...keys);
        cursor = next;
      } while (cursor !== '0');
    })(),
  ]);
  await redis.close().catch(() => undefined);
  for (const r of cleanup) if (r.status === 'rejected') console.error(`readme flow: cleanup incomplete (${id}):`, r.reason);
  // Kept when a step failed: the services' logs are in it.
  if (failed) console.error(`readme flow: the run's logs and pid files are in ${stackDir}`);
  else rmSync(stackDir, { recursive: true, force: true });
});

describe("the README's flow, on the stack `npm start -- --detach` prints", () => {
  it('npm start -- --detach starts everything and prints what the README says it prints', async () => {
    for (const key of Object.keys(DEFAULT_PORTS)) ports[key] = await freePort();
    mkdirSync(join(stackDir, 'kafka'), { recursive: true });
    const jars = join(process.env.STACK_DIR ?? join(REPO_ROOT, '.local'), 'kafka/libs');
    if (existsSync(jars)) symlinkSync(jars, join(stackDir, 'kafka/libs'));
    env = isolatedEnv();
    const started = await run('npm', ['start', '--', '--detach'], { env, timeoutMs: 100_000 });
    const output = `${started.stdout}${started.stderr}`;
    expect(started.code, output).toBe(0);
    printed = parsePrintout(started.stdout);
    expect(printed.gatewayUrl, output).toBe(`http://127.0.0.1:${ports.GATEWAY_PORT}`);
    // The console on its own port: the summary and the dashboard line name the same address.
    expect(printed.consoleUrl, output).toBe(`http://127.0.0.1:${ports.CONSOLE_PORT}/dashboard/`);
    expect(printed.dashboardUrl, output).toBe(printed.consoleUrl);

    // The README's block, against the printout with this run's isolated values put back to the defaults the README shows.
    const defaults: [string, string][] = [
      [stackDir, '.local'],
      [servers.kafkaBrokers, '127.0.0.1:9092'],
      [servers.clickhouseUrl, 'http://127.0.0.1:8123'],
      [servers.redisUrl, 'redis://127.0.0.1:6379'],
      [`database ${id})`, 'database ingest)'],
      [`+FROM+${id}.`, '+FROM+ingest.'],
      ...Object.entries(ports).map(([k, port]): [string, string] => [`127.0.0.1:${port}`, `127.0.0.1:${DEFAULT_PORTS[k as keyof typeof DEFAULT_PORTS]}`]),
    ];
    const normalised = printed.lines.map((line) => defaults.reduce((l, [from, to]) => l.replaceAll(from, to), line));
    const drift = printoutDrift(codeBlockAfter(readme, 'What `npm start` prints when it is done'), normalised);
    expect(drift, `README.md's block differs from what npm start printed:\n${output}`).toEqual([]);
  });

  it('every service npm start runs reports the project runtime (Node of .nvmrc) on its /metrics', async () => {
    the();
    const reported: Record<string, string> = {};
    for (const [service, port] of [
      ['gateway', ports.GATEWAY_OPS_PORT],
      ['console', ports.CONSOLE_OPS_PORT],
      ['processor', ports.PROCESSOR_OPS_PORT],
      ['crm-sink', ports.CRM_SINK_OPS_PORT],
    ] as const) {
      const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
      expect(res.status, `${service} /metrics`).toBe(200);
      reported[service] = assertProjectNode(`npm start's ${service}`, await res.text());
    }
    console.log(`readme flow: npm start's services run ${JSON.stringify(reported)}`);
  });

  it("the printout's curl sends an event (202)", async () => {
    const send = the().tryIt.find((c) => c.includes('/v1/events'));
    expect(send, the().lines.join('\n')).toBeDefined();
    const res = await shell(send ?? '');
    expect(res.status, res.output).toBe('202');
    expect(JSON.parse(res.body), res.output).toMatchObject({ accepted: 1, rejected: 0 });
    sentIds.push(...(JSON.parse(res.body) as { eventIds: string[] }).eventIds);
  });

  it('"Sending an event" sends with the printed key (202) and reads every event back (200 with its fields)', async () => {
    const steps = shellSteps(codeBlockAfter(readme, '## Sending an event'));
    expect(
      steps.flatMap((s) => (s.kind === 'set' ? [s.name] : [])),
      'the variables the README has the reader set',
    ).toEqual(['KEY', 'EVENT_ID']);
    const vars: Record<string, string> = { KEY: the().apiKey };
    for (const step of steps) {
      if (step.kind === 'set') continue;
      expect(step.command, 'README commands talk to localhost:3000').toContain('localhost:3000');
      const command = step.command.replaceAll('localhost:3000', new URL(the().gatewayUrl).host);
      if (!command.includes('$EVENT_ID')) {
        const res = await shell(command, vars);
        expect(res.status, res.output).toBe('202');
        expect(missingShownPairs(step.shown ?? '', res.body), `pairs the README shows, missing in:\n${res.output}`).toEqual([]);
        const ids = (JSON.parse(res.body) as { eventIds: string[] }).eventIds;
        sentIds.push(...ids);
        vars.EVENT_ID = ids[0] ?? '';
        continue;
      }
      // Every event sent so far, by the README's read-back command: 404 until the processor stored it.
      for (const eventId of sentIds) {
        const res = await eventually(
          `GET /v1/events/${eventId} to answer 200`,
          () => shell(command, { ...vars, EVENT_ID: eventId }),
          (r) => r.status === '404',
        );
        expect(res.status, res.output).toBe('200');
        expect(JSON.parse(res.body), res.output).toMatchObject({ eventId, eventName: 'Signed Up', email: 'ada@example.com', source: 'api' });
        if (eventId === vars.EVENT_ID) expect(missingShownPairs(step.shown ?? '', res.body), `pairs the README shows, missing in:\n${res.output}`).toEqual([]);
      }
    }
    expect(sentIds, 'events sent by the printout and the README').toHaveLength(2);
  });

  it("the printout's ClickHouse query shows the stored rows", async () => {
    const query = the().tryIt.find((c) => c.includes(the().clickhouseUrl));
    expect(query, the().lines.join('\n')).toBeDefined();
    // PrettyCompact bolds its header with terminal escapes, also over HTTP.
    const rows = (body: string) =>
      body
        .replace(/\x1b\[[0-9;]*m/g, '')
        .split('\n')
        .filter((l) => /│ Signed Up +│ ada@example\.com +│/.test(l));
    const res = await eventually(
      `${sentIds.length} rows`,
      () => shell(query ?? ''),
      (r) => r.status === '200' && rows(r.body).length < sentIds.length,
    );
    expect(res.status, res.output).toBe('200');
    expect(rows(res.body), res.output).toHaveLength(sentIds.length);
  });

  it('the dashboard: sign-in with the printed email and password, then every page and its data (200)', async () => {
    const { dashboardUrl, email, password, accountId } = the();
    const origin = new URL(dashboardUrl).origin;
    const seen = (what: string, res: Response, body: string) => `${what}: ${res.status} ${body.slice(0, 500)}`;
    const signIn = await fetch(`${dashboardUrl}api/session`, {
      method: 'POST',
      headers: { origin, 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    const signInBody = await signIn.text();
    expect(seen('sign-in', signIn, signInBody)).toMatch(/^sign-in: 200 /);
    expect(JSON.parse(signInBody)).toMatchObject({ email, account: { id: accountId } });
    const cookie = (signIn.headers.get('set-cookie') ?? '').split(';')[0] ?? '';
    const get = async (path: string) => {
      const res = await fetch(new URL(path, dashboardUrl), { headers: { cookie } });
      return { res, body: await res.text() };
    };

    expect(Object.keys(PAGE_DATA).sort(), 'the pages of services/console/web/src/App.tsx').toEqual(
      dashboardPages(readFileSync(join(REPO_ROOT, 'services/console/web/src/App.tsx'), 'utf8')).sort(),
    );
    for (const [page, apis] of Object.entries(PAGE_DATA)) {
      const html = await get(page);
      expect(seen(`page ${page}`, html.res, html.body)).toMatch(/^page \S+: 200 /);
      expect(html.body, `page ${page}`).toContain('<div id="root">');
      for (const script of html.body.matchAll(/(?:src|href)="(\/dashboard\/assets\/[^"]+)"/g)) {
        const asset = await get(script[1] ?? '');
        expect(asset.res.status, `${page}: ${script[1]}`).toBe(200);
      }
      for (const api of ['/session', ...apis]) {
        const data = await get(`api${api}`);
        expect(seen(`${page} ${api}`, data.res, data.body)).toMatch(/^\S+ \S+: 200 /);
      }
    }
    // The Usage page counts both events; the Event debugger lists and opens them.
    const usage = JSON.parse((await get('api/usage')).body) as { used: number; daily: { events: number }[] };
    expect({ used: usage.used, daily: usage.daily.reduce((sum, d) => sum + d.events, 0) }).toEqual({ used: sentIds.length, daily: sentIds.length });
    const listed = JSON.parse((await get('api/events')).body) as { events: { eventId: string }[] };
    expect(listed.events.map((e) => e.eventId).sort()).toEqual([...sentIds].sort());
    for (const eventId of sentIds) {
      const one = await get(`api/events/${eventId}`);
      expect(seen(`debugger ${eventId}`, one.res, one.body)).toMatch(/^debugger \S+: 200 /);
    }
  });

  it('the printed admin CLI command lists the demo account', async () => {
    const res = await shell(the().adminCommand);
    expect(res.status, res.output).toBe('0');
    expect(res.body, res.output).toMatch(new RegExp(`^${the().accountId} +Demo Company +pro `, 'm'));
  });

  it('npm run stop stops every service it started', async () => {
    const pids = livePids(runDir);
    expect(pids, 'services npm start left running').toHaveLength(4);
    const stopped = await run('npm', ['run', 'stop'], { env, timeoutMs: 60_000 });
    const output = `${stopped.stdout}${stopped.stderr}`;
    expect(stopped.code, output).toBe(0);
    expect(output).toMatch(/gateway: stopped[\s\S]*console: stopped[\s\S]*processor: stopped[\s\S]*crm-sink: stopped/);
    expect(
      pids.filter((pid) => {
        try {
          process.kill(pid, 0);
          return true;
        } catch {
          return false;
        }
      }),
      output,
    ).toEqual([]);
    const answering = await Promise.all(
      Object.values(ports).map((port) =>
        fetch(`http://127.0.0.1:${port}/`).then(
          () => port,
          () => undefined,
        ),
      ),
    );
    expect(answering.filter(Boolean), 'ports still answering').toEqual([]);
  });
});
