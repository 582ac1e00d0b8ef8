/**
 * Real servers: Kafka, ClickHouse, Redis (the shared stack); a fake CRM (testkit's HubSpot routes).
 * Rolling upgrade (docs/releases.md): release N's production bundles (built from a git worktree
 * of its tag, release-worktree.fixture.ts) and this checkout's (N+1) run side by side on the
 * same topics, database, Redis keys and consumer groups, as during a deploy. Every service is a
 * real OS process running its esbuild bundle.
 *
 * Each version writes what the other reads, and the phases make every crossing certain rather
 * than likely (only one processor and one crm-sink version runs in phases 1 and 2):
 * - control records: account A, its key, CRM credential and mapping are written by N's console,
 *   account B's by N+1's; both gateways take both keys, both sinks sync both accounts;
 * - phase 1: events of both accounts through both gateways; N+1's processor alone, N's sink alone;
 * - phase 2: N's processor alone, N+1's sink alone;
 * - phase 3: both versions of every service at once (one consumer group each), every event of
 *   phases 1 and 2 sent again through the other gateway.
 * Then ClickHouse holds each event exactly once and the CRM counts each exactly once.
 */
import { readlinkSync, realpathSync } from 'node:fs';
import { type CrmMapping } from '@ingest/schemas';
import { METRIC_NAMES, REPO_ROOT, sql, TOPICS, type TopicKey } from '@ingest/platform';
import {
  type ConsoleProcess,
  createTestClickHouse,
  createTestKafka,
  type GatewayProcess,
  metricSum,
  ProcessorFleet,
  processorSetup,
  type ServiceProcess,
  SinkFleet,
  startConsoleProcess,
  startGatewayProcess,
  type TestClickHouse,
  type TestKafka,
  uniqueSuffix,
  waitFor,
} from '@ingest/testkit';
import { type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildVersion } from '../image/build-bundles.js';
import { buildCurrentBundles, buildPreviousRelease, type ReleaseBuild } from './release-worktree.fixture.js';

const ADMIN_TOKEN = 'upgrade-test-admin-token-0123456789abcdef';
const PER_BATCH = 10;
/** The fake CRM's token, in both accounts' credentials. */
const TOKEN = `tok-upgrade-${uniqueSuffix()}`;
const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'main' },
  rules: [{ id: 'seen', when: { eventName: 'Upgrade Seen' }, object: 'contact', actions: [{ op: 'increment', field: 'seen' }] }],
};

let release: ReleaseBuild;
let kafka: TestKafka | undefined;
let clickhouse: TestClickHouse | undefined;
let crm: FakeCrm | undefined;
const stoppers: (() => Promise<unknown>)[] = [];

beforeAll(async () => {
  const started = Date.now();
  [release] = await Promise.all([buildPreviousRelease(), buildCurrentBundles()]);
  console.log(
    `rolling upgrade: N = ${release.tag} (${release.commit.slice(0, 12)}, ${release.cached ? 'cached' : 'built now'}, node_modules ${release.nodeModules}), N+1 = this checkout; bundles ready in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  // The new release's setup Job runs first (docs/releases.md): topics and migrations are N+1's.
  [kafka, clickhouse] = await Promise.all([createTestKafka(Object.keys(TOPICS) as TopicKey[]), createTestClickHouse()]);
  crm = await startFakeCrm({ tokens: [TOKEN], rateLimits: { hubspot: false } });
});

afterAll(async () => {
  for (const stop of stoppers.splice(0).reverse()) await stop().catch(() => undefined);
  await crm?.stop();
  await clickhouse?.cleanup();
  await kafka?.cleanup();
});

interface Account {
  id: string;
  apiKey: string;
  /** Which version's console wrote its records. */
  writtenBy: string;
}

describe('rolling upgrade: release N and this checkout side by side', () => {
  it('passes every event and control record from one version to the other, nothing lost or duplicated', async () => {
    const k = kafka ?? never('kafka');
    const ch = clickhouse ?? never('clickhouse');
    const fake = crm ?? never('crm');
    const versions = { old: { entry: 'dist' as const, root: release.root }, new: { entry: 'dist' as const } };
    const started = Date.now();
    // Streamed as it happens, so a run that times out shows how far it got.
    const note = (what: string) => console.log(`rolling upgrade ${((Date.now() - started) / 1000).toFixed(1)} s: ${what}`);
    const suffix = uniqueSuffix();
    const shared = { KAFKA_TOPIC_PREFIX: k.prefix, CLICKHOUSE_DATABASE: ch.database, REDIS_KEY_PREFIX: `t${suffix}:` };
    const consoleEnv = { ...shared, ADMIN_TOKEN, CRM_ALLOW_HTTP: 'true', CRM_ALLOWED_CIDRS: '127.0.0.1/32' };

    const [oldConsole, newConsole] = await Promise.all([
      startConsoleProcess(`upgrade-console-${release.tag}`, consoleEnv, versions.old),
      startConsoleProcess('upgrade-console-next', consoleEnv, versions.new),
    ]);
    stoppers.push(
      () => oldConsole.kill(),
      () => newConsole.kill(),
    );
    const a = await createAccount(oldConsole, release.tag, fake.url);
    const b = await createAccount(newConsole, 'next', fake.url);
    note('consoles up; account A written through N, account B through N+1');

    const [oldGateway, newGateway] = await Promise.all([
      startGatewayProcess(`upgrade-gateway-${release.tag}`, shared, versions.old),
      startGatewayProcess('upgrade-gateway-next', shared, versions.new),
    ]);
    stoppers.push(
      () => oldGateway.kill(),
      () => newGateway.kill(),
    );
    const gateways = { [release.tag]: oldGateway, next: newGateway };

    // One consumer group per stage for both versions, as in a deploy.
    const procSetup = processorSetup(k.prefix, ch.database, 'upgrade-processor');
    const oldProcessors = new ProcessorFleet({ ...procSetup, label: `upgrade-processor-${release.tag}`, run: versions.old });
    const newProcessors = new ProcessorFleet({ ...procSetup, label: 'upgrade-processor-next', run: versions.new });
    const sinkSetup = { topicPrefix: k.prefix, redisKeyPrefix: `t${suffix}sink:`, groupId: `crm-sink-upgrade-${suffix}`, env: {} };
    const oldSinks = new SinkFleet({ ...sinkSetup, label: `upgrade-sink-${release.tag}`, run: versions.old });
    const newSinks = new SinkFleet({ ...sinkSetup, label: 'upgrade-sink-next', run: versions.new });
    stoppers.push(
      () => oldProcessors.killAll(),
      () => newProcessors.killAll(),
      () => oldSinks.killAll(),
      () => newSinks.killAll(),
    );

    const sent = new Map<string, Sent>();
    const sendPhase = async (phase: string) => {
      for (const account of [a, b]) {
        for (const [version, gateway] of Object.entries(gateways)) {
          const events = Array.from({ length: PER_BATCH }, (_, i) => {
            const eventId = `${phase}-${account.writtenBy}-via-${version}-${i}`;
            return { eventId, eventName: 'Upgrade Seen', email: `${eventId}@upgrade.example`, properties: { phase, via: version } };
          });
          await post(gateway, account, events);
          for (const e of events) sent.set(e.eventId, { account, gateway: version, eventId: e.eventId });
        }
      }
    };

    // Phase 1: N's gateway -> N+1's processor -> N's sink; N+1's gateway -> N+1's processor -> N's sink.
    let processor = await newProcessors.start();
    let sink = await oldSinks.start();
    await sendPhase('p1');
    await expectStoredAndSynced(ch, fake, [a, b], sent, 'phase 1: N+1 processor alone, N sink alone');
    note('phase 1 stored and synced');

    // Phase 2: the other way round.
    await newProcessors.stop(processor);
    await oldSinks.stop(sink);
    processor = await oldProcessors.start();
    sink = await newSinks.start();
    await sendPhase('p2');
    await expectStoredAndSynced(ch, fake, [a, b], sent, 'phase 2: N processor alone, N+1 sink alone');
    note('phase 2 stored and synced');

    // Phase 3: both versions of everything, the earlier events sent again through the other gateway.
    const [p3Processor, p3Sink] = await Promise.all([newProcessors.start(), oldSinks.start()]);
    const dedupeCount = async (p: ServiceProcess) => {
      const text = await p.metrics();
      return metricSum(text, METRIC_NAMES.dedupeUnique) + metricSum(text, METRIC_NAMES.dedupeHits);
    };
    const before = { old: await dedupeCount(processor), new: await dedupeCount(p3Processor) };
    await sendPhase('p3');
    const again = new Map<string, { gateway: GatewayProcess; account: Account; events: object[] }>();
    for (const s of [...sent.values()].filter((x) => !x.eventId.startsWith('p3-'))) {
      const other = s.gateway === 'next' ? release.tag : 'next';
      const batch = again.get(`${other}/${s.account.id}`) ?? { gateway: gateways[other] ?? never(other), account: s.account, events: [] };
      batch.events.push({ eventId: s.eventId, eventName: 'Upgrade Seen', email: `${s.eventId}@upgrade.example`, properties: { phase: 'again', via: other } });
      again.set(`${other}/${s.account.id}`, batch);
    }
    for (const { gateway, account, events } of again.values()) await post(gateway, account, events);
    await expectStoredAndSynced(ch, fake, [a, b], sent, 'phase 3: both versions of every service');
    note('phase 3 stored and synced');
    // Both releases' processors shared the work of phase 3 (the group spread the partitions over both).
    expect({ old: (await dedupeCount(processor)) - before.old > 0, new: (await dedupeCount(p3Processor)) - before.new > 0 }).toEqual({ old: true, new: true });

    // Nothing crashed on the way, and both versions are still healthy side by side.
    const all = [oldConsole, newConsole, oldGateway, newGateway, processor, p3Processor, sink, p3Sink];
    expect(all.map((p) => `${p.name}: ${p.exitStatus() ?? 'running'}`)).toEqual(all.map((p) => `${p.name}: running`));
    for (const p of all) expect(await p.health(), p.name).toMatchObject({ live: 200, ready: 200 });
    // And each ran its release's bundle (a path relative to its working directory): N's from the worktree of its tag.
    const roots = Object.fromEntries(all.map((p) => [p.name, realpathSync(readlinkSync(`/proc/${p.pid}/cwd`))]));
    const [oldRoot, newRoot] = [realpathSync(release.root), realpathSync(REPO_ROOT)];
    expect(roots).toEqual({
      [oldConsole.name]: oldRoot,
      [oldGateway.name]: oldRoot,
      [processor.name]: oldRoot,
      [p3Sink.name]: oldRoot,
      [newConsole.name]: newRoot,
      [newGateway.name]: newRoot,
      [p3Processor.name]: newRoot,
      [sink.name]: newRoot,
    });
    // The release each says it runs (ingest_build_info; N may predate the metric).
    const reported = async (p: { metrics(): Promise<string> }) => /^ingest_build_info\{[^}]*version="([^"]+)"/m.exec(await p.metrics())?.[1];
    for (const p of [newConsole, newGateway, p3Processor, sink]) expect(await reported(p), p.name).toBe(buildVersion());
    for (const p of [oldConsole, oldGateway, processor, p3Sink]) expect([undefined, release.tag], p.name).toContain(await reported(p));
    expect([...oldProcessors.unexpectedExits(), ...newProcessors.unexpectedExits(), ...oldSinks.unexpectedExits(), ...newSinks.unexpectedExits()]).toEqual([]);
  });
});

interface Sent {
  account: Account;
  /** The version whose gateway first took it. */
  gateway: string;
  eventId: string;
}

async function createAccount(console: ConsoleProcess, version: string, crmUrl: string): Promise<Account> {
  const adminUrl = console.adminUrl ?? never('the console has no admin listener');
  const admin = async <T>(method: string, path: string, body: unknown, expected: number): Promise<T> => {
    const res = await fetch(`${adminUrl}/admin/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status !== expected) throw new Error(`${version} console: ${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as T;
  };
  const account = await admin<{ id: string }>('POST', '/accounts', { name: `Upgrade ${version}`, plan: 'pro' }, 201);
  const { apiKey } = await admin<{ apiKey: string }>('POST', `/accounts/${account.id}/keys`, { name: 'upgrade' }, 201);
  await admin('PUT', `/accounts/${account.id}/crm/credentials/main`, { type: 'hubspot', accessToken: TOKEN, baseUrl: crmUrl }, 200);
  await admin('PUT', `/accounts/${account.id}/crm/mapping?check=skip`, mapping, 201);
  return { id: account.id, apiKey, writtenBy: version };
}

/** Posts until a 202: a gateway learns a key the other version's console wrote within the control plane's bound. */
async function post(gateway: GatewayProcess, account: Account, events: object[]): Promise<void> {
  await waitFor(
    async () => {
      const res = await fetch(`${gateway.url}/v1/events`, {
        method: 'POST',
        headers: { authorization: `Bearer ${account.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ events }),
      });
      if (res.status !== 202) throw new Error(`${gateway.name}: ${res.status} ${await res.text()}`);
      return true;
    },
    { description: `${gateway.name} taking events of the account ${account.writtenBy}'s console wrote`, timeoutMs: 30_000, intervalMs: 500 },
  );
}

/** Every event sent so far stored exactly once, and counted exactly once in the CRM; no other. */
async function expectStoredAndSynced(ch: TestClickHouse, fake: FakeCrm, accounts: Account[], sent: Map<string, Sent>, what: string): Promise<void> {
  const expected = [...sent.keys()].sort();
  const ids = accounts.map((x) => x.id);
  await waitFor(
    async () => {
      const rows = await ch.ch.query<{ id: string; n: string }>(
        sql`SELECT event_id AS id, count() AS n FROM events WHERE account_id IN ${ids} GROUP BY event_id ORDER BY event_id`,
      );
      const stored = rows.map((r) => r.id);
      const twice = rows.filter((r) => Number(r.n) > 1).map((r) => r.id);
      if (twice.length > 0) throw new Error(`stored more than once: ${twice.join(', ')}`);
      if (stored.join() !== expected.join()) {
        throw new Error(`${stored.length} of ${expected.length} stored; missing ${expected.filter((id) => !stored.includes(id)).join(', ')}`);
      }
      return true;
    },
    { description: `${what}: every event in ClickHouse once`, timeoutMs: 90_000, intervalMs: 500 },
  );
  await waitFor(
    () => {
      const contacts = [...fake.records('hubspot', 'contacts').values()];
      const seen = new Map(contacts.map((c) => [String(c.properties.email), Number(c.properties.seen)]));
      const missing = expected.filter((id) => !seen.has(`${id}@upgrade.example`));
      const counts = expected.filter((id) => seen.get(`${id}@upgrade.example`) !== 1 && seen.has(`${id}@upgrade.example`));
      if (counts.length > 0)
        throw new Error(`counted other than once in the CRM: ${counts.map((id) => `${id}=${seen.get(`${id}@upgrade.example`)}`).join(', ')}`);
      if (missing.length > 0) throw new Error(`${expected.length - missing.length} of ${expected.length} in the CRM; missing ${missing.join(', ')}`);
      if (contacts.length !== expected.length) throw new Error(`${contacts.length} contacts for ${expected.length} events`);
      return true;
    },
    { description: `${what}: every event counted once in the CRM`, timeoutMs: 90_000, intervalMs: 500 },
  );
}

function never(what: string): never {
  throw new Error(`${what} is missing`);
}
