/**
 * Real server: Kafka. A CRM dead letter (written by the crm-sink's dead-letter sink, source
 * events.unique) is listed with --crm and replayed to crm.replay, not back to events.unique:
 * storage must not see the event again.
 */
import { encodeSuppression, identifierHash, suppressionKey } from '@ingest/domain';
import { type ConsumedMessage, createDeadLetterSink, createProducer, type Producer, readTopicToEnd, REPLAYED_FROM_HEADER } from '@ingest/platform';
import { createTestKafka, integrationEnv, type TestKafka, testLogger } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';

let kafka: TestKafka;
let producer: Producer;
let env: Record<string, string>;

beforeAll(async () => {
  kafka = await createTestKafka(['eventsUnique', 'crmDeadLetters', 'crmReplay', 'deadLetters', 'auditLog', 'erasures']);
  producer = createProducer(kafka.kafka);
  await producer.connect();
  env = { KAFKA_BROKERS: integrationEnv().kafkaBrokers, KAFKA_TOPIC_PREFIX: kafka.prefix };
});

afterAll(async () => {
  await producer?.disconnect();
  await kafka?.cleanup();
});

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const result = { code: 0, stdout: '', stderr: '' };
  result.code = await runCli(args, { env, stdout: (t) => void (result.stdout += t), stderr: (t) => void (result.stderr += t) });
  return result;
}

async function messagesOf(topic: string): Promise<ConsumedMessage[]> {
  const out: ConsumedMessage[] = [];
  await readTopicToEnd(kafka.kafka, { topic, logger: testLogger(), timeoutMs: 30_000, onMessage: (m) => void out.push(m) });
  return out;
}

describe('deadletters --crm', () => {
  it('lists CRM dead letters and replays them to crm.replay only', async () => {
    const value = JSON.stringify({ v: 1, accountId: 'acc_crm', eventId: 'evt-crm-1' });
    const sink = createDeadLetterSink(producer, kafka.topic('crmDeadLetters'), 'crm-sink');
    await sink.publish([
      {
        message: {
          topic: kafka.topic('eventsUnique'),
          partition: 1,
          offset: '42',
          key: Buffer.from('acc_crm:a@b.io'),
          value: Buffer.from(value),
          headers: {},
          timestamp: 0,
        },
        code: 'crm_permanent',
        reason: 'account acc_crm event evt-crm-1: Property "tier" does not exist',
      },
    ]);

    const listed = await cli(['list', '--crm', '--json']);
    expect(listed.code).toBe(0);
    const entries = (JSON.parse(listed.stdout) as { entries: { partition: number; offset: string; code: string }[] }).entries;
    expect(entries.map((e) => e.code)).toEqual(['crm_permanent']);
    expect((await cli(['list', '--json'])).stdout).not.toContain('crm_permanent');

    const position = `${entries[0]?.partition}/${entries[0]?.offset}`;
    const replayed = await cli(['replay', '--crm', '--offset', position]);
    expect(replayed.code).toBe(0);
    const [copy, ...more] = await messagesOf(kafka.topic('crmReplay'));
    expect(more).toEqual([]);
    expect(copy?.value?.toString()).toBe(value);
    expect(copy?.key?.toString()).toBe('acc_crm:a@b.io');
    expect(copy?.headers[REPLAYED_FROM_HEADER]).toBe(`${kafka.topic('crmDeadLetters')}/${position}`);
    expect(await messagesOf(kafka.topic('eventsUnique'))).toEqual([]);
  });

  it('does not replay the dead letters of an erased person (docs/erasure.md)', async () => {
    const event = (eventId: string, email: string) =>
      JSON.stringify({
        v: 1,
        accountId: 'acc_er',
        eventId,
        eventName: 'x',
        email,
        domain: null,
        timestampMs: 1,
        receivedAtMs: 1,
        properties: {},
        source: 'api',
        jobId: null,
      });
    const erased = {
      v: 1 as const,
      id: 'er1',
      accountId: 'acc_er',
      type: 'email',
      identifierHash: identifierHash('acc_er', 'email', 'gone@er.example'),
      erasedAt: '',
    };
    await producer.send(kafka.topic('erasures'), [{ key: suppressionKey(erased), value: encodeSuppression(erased) }]);
    const sink = createDeadLetterSink(producer, kafka.topic('crmDeadLetters'), 'crm-sink');
    const letter = (eventId: string, email: string) => ({
      message: {
        topic: kafka.topic('eventsUnique'),
        partition: 0,
        offset: '7',
        key: Buffer.from(`acc_er:${email}`),
        value: Buffer.from(event(eventId, email)),
        headers: {},
        timestamp: 0,
      },
      code: 'crm_erasure_test',
      reason: 'refused',
    });
    await sink.publish([letter('evt-gone', 'gone@er.example'), letter('evt-kept', 'kept@er.example')]);

    const replayed = await cli(['replay', '--crm', '--code', 'crm_erasure_test', '--yes']);
    expect(replayed.code, replayed.stderr).toBe(0);
    expect(replayed.stderr).toContain('1 selected dead letters hold events of erased people or companies');
    const ids = (await messagesOf(kafka.topic('crmReplay'))).map((m) => (JSON.parse(m.value?.toString() ?? '{}') as { eventId?: string }).eventId);
    expect(ids).toContain('evt-kept');
    expect(ids).not.toContain('evt-gone');
  });
});
