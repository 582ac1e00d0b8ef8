/**
 * Real server: Kafka (from the local stack or a container; see scripts/test). Dead letters are
 * written with the processors' own sink under a fresh topic prefix; the CLI lists them (once as
 * its own process, exactly as `npm run deadletters` starts it, otherwise in-process through
 * `runCli`) and replays them to their source topic, where the original message is read back.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  type ConsumedMessage,
  createBatchConsumer,
  createDeadLetterSink,
  createProducer,
  type DeadLetterSink,
  type Producer,
  REPLAYED_FROM_HEADER,
} from '@ingest/platform';
import { createTestKafka, integrationEnv, type TestKafka, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';

const ROOT = fileURLToPath(new URL('../../../..', import.meta.url));
const TSX = fileURLToPath(new URL('../../../../node_modules/.bin/tsx', import.meta.url));

let kafka: TestKafka;
let producer: Producer;
let sink: DeadLetterSink;
let env: Record<string, string>;

beforeAll(async () => {
  // audit.log: every replay is audited (cli.audit.integration.test.ts reads the records).
  kafka = await createTestKafka(['eventsRaw', 'deadLetters', 'auditLog', 'erasures']);
  producer = createProducer(kafka.kafka);
  await producer.connect();
  sink = createDeadLetterSink(producer, kafka.topic('deadLetters'), 'processor-storage');
  env = { KAFKA_BROKERS: integrationEnv().kafkaBrokers, KAFKA_TOPIC_PREFIX: kafka.prefix };
});

afterAll(async () => {
  await producer?.disconnect();
  await kafka?.cleanup();
});

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The CLI as its own process, as `npm run deadletters` starts it. */
function cliProcess(args: string[]): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      TSX,
      ['tools/cli/src/main.ts', 'deadletters', ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 90_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? (typeof error.code === 'number' ? error.code : -1) : 0, stdout, stderr });
      },
    );
  });
}

async function cli(args: string[]): Promise<CliResult> {
  const result = { code: 0, stdout: '', stderr: '' };
  result.code = await runCli(args, {
    env,
    stdout: (t) => void (result.stdout += t),
    stderr: (t) => void (result.stderr += t),
  });
  return result;
}

function original(n: number, value: string, headers: Record<string, string> = {}): ConsumedMessage {
  return {
    topic: kafka.topic('eventsRaw'),
    partition: n % 3,
    offset: String(100 + n),
    key: Buffer.from(`acc_dlq:evt-${n}`),
    value: Buffer.from(value),
    headers: { traceparent: `00-trace-${n}-01`, ...headers },
    timestamp: Date.now(),
  };
}

interface ListedEntry {
  position: string;
  code: string;
  sourceTopic: string;
  replayedFrom: string | null;
  valueBytes: number;
}

async function listJson(args: string[] = []): Promise<ListedEntry[]> {
  const result = await cli(['list', '--json', ...args]);
  expect(result.code).toBe(0);
  return (JSON.parse(result.stdout) as { entries: ListedEntry[] }).entries;
}

/** Reads the source topic from the beginning until `count` replayed messages arrived. */
async function readReplayed(count: number): Promise<ConsumedMessage[]> {
  const seen: ConsumedMessage[] = [];
  const consumer = createBatchConsumer(kafka.kafka, {
    name: 'replay-reader',
    groupId: `replay-reader-${uniqueSuffix()}`,
    topics: [kafka.topic('eventsRaw')],
    logger: testLogger(),
    commitOffsets: false,
    handleBatch: async (messages) => void seen.push(...messages),
  });
  await consumer.start();
  try {
    await waitFor(() => seen.length >= count, { description: `${count} replayed messages`, timeoutMs: 30_000 });
  } finally {
    await consumer.stop();
  }
  return seen;
}

describe('deadletters CLI against real Kafka', () => {
  it('lists dead letters without their contents, replays by code, and warns about replaying again', async () => {
    await sink.publish([
      { message: original(1, '{"v":1, not json'), code: 'invalid_json', reason: 'value is not JSON' },
      { message: original(2, '{"v":1,"accountId":"acc_dlq"}'), code: 'schema_mismatch', reason: 'event record / must have required property eventId' },
      { message: original(3, 'also not json'), code: 'invalid_json', reason: 'value is not JSON' },
    ]);

    // As its own process: exit code 0, a table with sizes, no event contents.
    const listed = await cliProcess(['list']);
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^POSITION +FAILED AT +CODE +SOURCE/);
    expect(listed.stdout.match(/^\d+\/\d+ +\S+Z +(invalid_json|schema_mismatch) /gm)).toHaveLength(3);
    expect(listed.stdout).toContain(`3 dead letters in ${kafka.topic('deadLetters')}`);
    expect(listed.stdout).not.toContain('not json');
    expect(listed.stdout).not.toContain('acc_dlq:evt');

    const usage = await cliProcess(['replay', '--offset', 'nope']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--offset must look like <partition>/<offset>');

    const invalid = await listJson(['--code', 'invalid_json']);
    expect(invalid.map((e) => e.code)).toEqual(['invalid_json', 'invalid_json']);
    expect(invalid.every((e) => e.sourceTopic === kafka.topic('eventsRaw'))).toBe(true);
    expect((await listJson(['--limit', '1'])).length).toBe(1);

    // Without --yes a replay by code only shows what it would send.
    const dry = await cli(['replay', '--code', 'invalid_json']);
    expect(dry.code).toBe(2);
    expect(dry.stdout).toMatch(/^would replay 2 dead letters:/);
    expect(dry.stderr).toContain('add --yes');

    const replayed = await cli(['replay', '--code', 'invalid_json', '--yes']);
    expect(replayed.code).toBe(0);
    expect(replayed.stdout).toMatch(/^replayed 2 dead letters:\n {2}\d+\/\d+ -> \S+events\.raw \(invalid_json/);
    expect(replayed.stderr).toMatch(/audit: recorded as dead_letter\.replay by \S+, request [0-9a-f-]{36}/);
    expect(replayed.stderr).toContain('sends further copies');

    const back = await readReplayed(2);
    const byKey = new Map(back.map((m) => [m.key?.toString(), m]));
    expect([...byKey.keys()].sort()).toEqual(['acc_dlq:evt-1', 'acc_dlq:evt-3']);
    const first = byKey.get('acc_dlq:evt-1');
    expect(first?.value?.toString()).toBe('{"v":1, not json');
    expect(byKey.get('acc_dlq:evt-3')?.value?.toString()).toBe('also not json');
    const firstPosition = invalid.find((e) => e.valueBytes === '{"v":1, not json'.length)?.position;
    expect(first?.headers).toEqual({
      traceparent: '00-trace-1-01',
      [REPLAYED_FROM_HEADER]: `${kafka.topic('deadLetters')}/${firstPosition}`,
    });
    expect(Object.keys(first?.headers ?? {}).filter((h) => h.startsWith('dlq-') && h !== REPLAYED_FROM_HEADER)).toEqual([]);

    // The replay fails again and comes back: replaying the original again is allowed, with a warning.
    await sink.publish([
      {
        message: { ...original(1, '{"v":1, not json', first?.headers), topic: kafka.topic('eventsRaw') },
        code: 'invalid_json',
        reason: 'value is not JSON',
      },
    ]);
    const again = await cli(['replay', '--offset', firstPosition ?? '']);
    expect(again.code).toBe(0);
    expect(again.stderr).toMatch(new RegExp(`^warning: ${firstPosition} was replayed before and failed again \\(as \\d+/\\d+\\)`, 'm'));
    const afterAgain = await listJson();
    expect(afterAgain.filter((e) => e.replayedFrom === `${kafka.topic('deadLetters')}/${firstPosition}`)).toHaveLength(1);
  });

  it('fails with 1 and replays nothing when an entry does not exist or cannot be replayed', async () => {
    const missing = await cli(['replay', '--offset', '0/999999']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^error: no dead letter at 0\/999999 in \S+; nothing was replayed/);

    // A letter naming a topic outside the deployment is refused: headers do not choose targets.
    await sink.publish([{ message: { ...original(9, 'x'), topic: 'elsewhere.events.raw' }, code: 'crafted_target', reason: 'test' }]);
    const refused = await cli(['replay', '--code', 'crafted_target', '--yes']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/cannot be replayed: source topic elsewhere\.events\.raw is not a topic of this deployment\nnothing was replayed/);

    // Still there to be inspected or fixed.
    expect((await listJson(['--code', 'crafted_target'])).map((e) => e.sourceTopic)).toEqual(['elsewhere.events.raw']);
  });
});
