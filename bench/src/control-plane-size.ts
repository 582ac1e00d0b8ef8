/**
 * The control plane at size (`npm run bench:control-plane`, docs/benchmarks.md): every gateway,
 * console and crm-sink holds the accounts, API keys and mappings its role reads in memory, read
 * from the compacted control topics at start. This measures, on the local broker, how long a
 * start takes to read them to their end and what the state costs in heap, for a given number of
 * accounts, keys and mappings (default 100,000 / 200,000 / 10,000), per role.
 *
 * The records are written straight to the topics under a fresh prefix, in the stores' own value
 * shapes (the Account and ApiKeyRecord types, a mapping record as putMapping writes it): writing
 * 310,000 records through the store's API would wait for a read-back after each. Each role is
 * measured in a child process of its own (`--expose-gc`), heap after a full GC before and after
 * start(). The topics are deleted at the end.
 */
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { type Account, type ApiKeyRecord, createControlPlane, generateApiKey, mappingKey } from '@ingest/domain';
import type { CrmMapping, StoredMappingRecord } from '@ingest/schemas';
import { controlTopicsRead, createProducer, type KafkaRole, type OutgoingMessage } from '@ingest/platform';
import { CONTROL_PLANE_TOPICS, createTestKafka, testLogger } from '@ingest/testkit';

interface Sizes {
  accounts: number;
  keys: number;
  mappings: number;
}

interface Measured {
  role: string;
  startMs: number;
  heapMb: number;
  rssMb: number;
  accounts: number;
}

// Under the broker's 1 MB request size with the largest records (mappings, about 900 bytes).
const BATCH = 500;
const ROLES: (KafkaRole | 'all')[] = ['ingest', 'crm-sink', 'console'];

function option(name: string, fallback: number): number {
  const at = process.argv.indexOf(`--${name}`);
  const value = at >= 0 ? Number(process.argv[at + 1]) : fallback;
  if (!Number.isInteger(value) || value < 0) throw new Error(`--${name} must be a whole number`);
  return value;
}

/** A mapping of realistic size: five rules over contacts and companies. */
function mapping(i: number): CrmMapping {
  return {
    version: 1,
    crm: { type: 'hubspot', credentialsRef: 'main' },
    rules: [
      { id: 'signed-up', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field: 'signup_source', from: { property: 'source' } }] },
      { id: 'seen', when: { eventName: 'Page Viewed' }, object: 'contact', actions: [{ op: 'max', field: 'last_seen_at', from: { event: 'timestamp' } }] },
      { id: 'exports', when: { eventName: 'Report Exported' }, object: 'contact', actions: [{ op: 'increment', field: 'exports_count' }] },
      { id: 'plan', when: { eventName: 'Plan Changed' }, object: 'company', actions: [{ op: 'set', field: 'plan', from: { property: 'plan' } }] },
      { id: `seats-${i}`, when: { eventName: 'Seat Added' }, object: 'company', actions: [{ op: 'increment', field: 'seats' }] },
    ],
  } as CrmMapping;
}

async function seed(prefix: string, topic: (key: (typeof CONTROL_PLANE_TOPICS)[number]) => string, kafka: Parameters<typeof createProducer>[0], sizes: Sizes) {
  const producer = createProducer(kafka);
  await producer.connect();
  const at = new Date().toISOString();
  const accountId = (i: number) => `acc_bench${String(i).padStart(8, '0')}`;
  const send = async (target: string, count: number, make: (i: number) => OutgoingMessage) => {
    for (let from = 0; from < count; from += BATCH) {
      const messages = Array.from({ length: Math.min(BATCH, count - from) }, (_, j) => make(from + j));
      await producer.send(target, messages);
    }
  };
  const started = Date.now();
  await send(topic('controlAccounts'), sizes.accounts, (i) => {
    const account: Account = { id: accountId(i), name: `Bench account ${i}`, plan: i % 10 === 0 ? 'pro' : 'free', createdAt: at, updatedAt: at };
    return { key: account.id, value: JSON.stringify(account) };
  });
  await send(topic('controlApiKeys'), sizes.keys, (i) => {
    const key = generateApiKey();
    const record: ApiKeyRecord = {
      id: `key_bench${String(i).padStart(8, '0')}`,
      accountId: accountId(i % Math.max(1, sizes.accounts)),
      name: `key ${i}`,
      prefix: key.prefix,
      hash: key.hash,
      createdAt: at,
      revokedAt: null,
      scopes: ['events:write', 'events:read'],
      type: 'secret',
    } as ApiKeyRecord;
    return { key: record.id, value: JSON.stringify(record) };
  });
  await send(topic('controlMappings'), sizes.mappings, (i) => {
    const record: StoredMappingRecord = {
      accountId: accountId(i % Math.max(1, sizes.accounts)),
      version: 1,
      writeId: randomBytes(8).toString('hex'),
      mapping: mapping(i),
      createdAt: at,
      author: 'admin',
    };
    return { key: mappingKey(record.accountId, record.version, record.writeId), value: JSON.stringify(record) };
  });
  await producer.disconnect();
  console.log(
    `seeded ${prefix}: ${sizes.accounts} accounts, ${sizes.keys} keys, ${sizes.mappings} mappings in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
}

/** In the child: one role's start, timed, and its heap after a full GC. */
async function measure(prefix: string, role: KafkaRole | 'all'): Promise<void> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with --expose-gc');
  const { createKafkaClient } = await import('@ingest/platform');
  const { integrationEnv } = await import('@ingest/testkit');
  const env = integrationEnv();
  const kafka = createKafkaClient({ brokers: env.kafkaBrokers, clientId: `bench-cp-${role}`, driver: env.kafkaDriver, logger: testLogger() });
  const producer = createProducer(kafka);
  await producer.connect();
  const cp = createControlPlane({
    kafka,
    producer,
    topicPrefix: prefix,
    logger: testLogger(),
    instanceId: `bench-${role}`,
    startTimeoutMs: 600_000,
    ...(role === 'all' ? {} : { readTopics: controlTopicsRead(role) }),
  });
  gc();
  const before = process.memoryUsage();
  const t0 = performance.now();
  await cp.start();
  const startMs = performance.now() - t0;
  gc();
  const after = process.memoryUsage();
  const result: Measured = {
    role,
    startMs,
    heapMb: (after.heapUsed - before.heapUsed) / 1024 / 1024,
    rssMb: after.rss / 1024 / 1024,
    accounts: cp.listAccounts().length,
  };
  await cp.stop();
  await producer.disconnect();
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

function child(prefix: string, role: string): Promise<Measured> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), '--measure', prefix, role], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    proc.stdout.on('data', (d: Buffer) => (out += d.toString()));
    proc.on('error', reject);
    proc.on('exit', (code) => {
      const line = out.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !line.startsWith('{')) reject(new Error(`measuring ${role} failed (exit ${code}): ${out.slice(-500)}`));
      else resolve(JSON.parse(line) as Measured);
    });
  });
}

async function main(): Promise<void> {
  const measuring = process.argv.indexOf('--measure');
  if (measuring >= 0) return measure(process.argv[measuring + 1] ?? '', (process.argv[measuring + 2] ?? 'all') as KafkaRole | 'all');
  const sizes: Sizes = { accounts: option('accounts', 100_000), keys: option('keys', 200_000), mappings: option('mappings', 10_000) };
  const kafka = await createTestKafka([...CONTROL_PLANE_TOPICS]);
  try {
    await seed(kafka.prefix, kafka.topic, kafka.kafka, sizes);
    const rows: Measured[] = [];
    for (const role of ROLES) {
      const measured = await child(kafka.prefix, role);
      // Every role reads control.accounts: a start that read fewer did not reach the end.
      if (measured.accounts !== sizes.accounts) throw new Error(`${role} read ${measured.accounts} accounts of ${sizes.accounts}`);
      rows.push(measured);
      console.log(
        `${role}: start ${(measured.startMs / 1000).toFixed(2)} s, state ${measured.heapMb.toFixed(0)} MB of heap, RSS ${measured.rssMb.toFixed(0)} MB`,
      );
    }
    console.log('\n| Role (topics read) | Start (read to end) | Heap of the state | RSS after start |\n|---|---|---|---|');
    for (const r of rows) {
      const topics = r.role === 'all' ? 'all' : controlTopicsRead(r.role as KafkaRole).join(', ');
      console.log(`| ${r.role} (${topics}) | ${(r.startMs / 1000).toFixed(1)} s | ${r.heapMb.toFixed(0)} MB | ${r.rssMb.toFixed(0)} MB |`);
    }
  } finally {
    await kafka.cleanup();
  }
}

await main();
