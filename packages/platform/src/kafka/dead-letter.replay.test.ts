import { describe, expect, it } from 'vitest';
import type { ConsumedMessage } from './consumer.js';
import { toDeadLetterMessage } from './dead-letter.js';
import {
  type DeadLetterEntry,
  deadLetterAccountId,
  earlierReplays,
  entryPosition,
  matchesSelection,
  planReplay,
  REPLAYED_FROM_HEADER,
  replayDeadLetters,
  sortEntries,
  toDeadLetterEntry,
  toReplayMessage,
} from './dead-letter.replay.js';
import type { OutgoingMessage, Producer } from './producer.js';

const DLQ = 'p.events.deadletter';

function source(overrides: Partial<ConsumedMessage> = {}): ConsumedMessage {
  return {
    topic: 'p.events.raw',
    partition: 4,
    offset: '1234',
    key: Buffer.from('acc_1:evt-1'),
    value: Buffer.from('{"v":1, not json'),
    headers: { traceparent: '00-abc-def-01' },
    timestamp: 0,
    ...overrides,
  };
}

/** A dead letter as the sink writes it, read back from the dead-letter topic at `partition/offset`. */
function letter(
  partition: number,
  offset: string,
  code = 'invalid_json',
  original = source(),
  failedAt = new Date('2026-01-15T10:00:00.000Z'),
): ConsumedMessage {
  const out = toDeadLetterMessage('processor-storage', { message: original, code, reason: 'value is not JSON' }, failedAt);
  return {
    topic: DLQ,
    partition,
    offset,
    key: out.key === null ? null : Buffer.from(out.key),
    value: Buffer.from(out.value),
    headers: out.headers ?? {},
    timestamp: failedAt.getTime(),
  };
}

describe('dead-letter entries', () => {
  it('reads the reason and origin from the headers', () => {
    const entry = toDeadLetterEntry(letter(1, '7'));
    expect(entry).toMatchObject({
      partition: 1,
      offset: '7',
      code: 'invalid_json',
      reason: 'value is not JSON',
      sourceTopic: 'p.events.raw',
      sourcePartition: 4,
      sourceOffset: '1234',
      failedAt: '2026-01-15T10:00:00.000Z',
      consumer: 'processor-storage',
      valueBytes: 16,
      replayedFrom: null,
    });
    expect(entry.key?.toString()).toBe('acc_1:evt-1');
    expect(entryPosition(entry)).toBe('1/7');
  });

  it('tolerates letters without headers', () => {
    const entry = toDeadLetterEntry({ topic: DLQ, partition: 0, offset: '0', key: null, value: null, headers: {}, timestamp: 0 });
    expect(entry).toMatchObject({ code: '', sourceTopic: '', sourcePartition: null, valueBytes: 0, key: null });
  });

  it('orders by failure time, then position', () => {
    const a = toDeadLetterEntry(letter(1, '10', 'x', source(), new Date('2026-01-02T00:00:00Z')));
    const b = toDeadLetterEntry(letter(0, '9', 'x', source(), new Date('2026-01-01T00:00:00Z')));
    const c = toDeadLetterEntry(letter(0, '10', 'x', source(), new Date('2026-01-01T00:00:00Z')));
    const d = toDeadLetterEntry(letter(0, '9', 'x', source(), new Date('2026-01-02T00:00:00Z')));
    expect(sortEntries([a, c, d, b]).map(entryPosition)).toEqual(['0/9', '0/10', '0/9', '1/10']);
  });

  it('selects by position or by code', () => {
    const entries = [toDeadLetterEntry(letter(0, '1')), toDeadLetterEntry(letter(1, '1', 'schema_mismatch')), toDeadLetterEntry(letter(2, '5'))];
    expect(entries.filter(matchesSelection({ positions: ['1/1', '2/5', '9/9'] })).map(entryPosition)).toEqual(['1/1', '2/5']);
    expect(entries.filter(matchesSelection({ code: 'invalid_json' })).map(entryPosition)).toEqual(['0/1', '2/5']);
  });
});

describe('replay', () => {
  it('sends the original key, value and headers, without the dlq-* headers, with where it came from', () => {
    const entry = toDeadLetterEntry(letter(2, '42', 'invalid_json', source({ headers: { traceparent: 't', [REPLAYED_FROM_HEADER]: `${DLQ}/0/1` } })));
    const message = toReplayMessage(entry, DLQ);
    expect(message.key?.toString()).toBe('acc_1:evt-1');
    expect(message.value.toString()).toBe('{"v":1, not json');
    expect(message.headers).toEqual({ traceparent: 't', [REPLAYED_FROM_HEADER]: `${DLQ}/2/42` });
  });

  it('replays only into the deployment topics, never into the dead-letter topic', () => {
    const ok = toDeadLetterEntry(letter(0, '1'));
    const foreign = toDeadLetterEntry(letter(0, '2', 'x', source({ topic: 'other.events.raw' })));
    const loop = toDeadLetterEntry(letter(0, '3', 'x', source({ topic: DLQ })));
    const unknown = { ...toDeadLetterEntry(letter(0, '4')), sourceTopic: '' };
    const plan = planReplay([ok, foreign, loop, unknown], { deadLetterTopic: DLQ, allowedTopics: ['p.events.raw', DLQ] });
    expect([...plan.byTopic.entries()].map(([t, es]) => [t, es.map(entryPosition)])).toEqual([['p.events.raw', ['0/1']]]);
    expect(plan.refused.map((r) => [entryPosition(r.entry), r.reason])).toEqual([
      ['0/2', 'source topic other.events.raw is not a topic of this deployment'],
      ['0/3', `source topic ${DLQ} is not a topic of this deployment`],
      ['0/4', 'no dlq-source-topic header'],
    ]);
  });

  it('sends nothing when any selected entry is refused, and everything per topic otherwise', async () => {
    const sent: [string, OutgoingMessage[]][] = [];
    const producer: Producer = {
      connect: async () => {},
      disconnect: async () => {},
      send: async (topic, messages) => void sent.push([topic, messages]),
      sendBatch: async (batches) => void sent.push(...batches.map((b): [string, OutgoingMessage[]] => [b.topic, b.messages])),
      settled: async () => {},
      queuedBytes: () => 0,
      ready: () => true,
      alive: () => true,
    };
    const entries = [
      toDeadLetterEntry(letter(0, '1')),
      toDeadLetterEntry(letter(0, '2', 'x', source({ topic: 'p.jobs.chunks' }))),
      toDeadLetterEntry(letter(1, '1')),
    ];
    const refused = planReplay([...entries, toDeadLetterEntry(letter(0, '3', 'x', source({ topic: 'elsewhere' })))], {
      deadLetterTopic: DLQ,
      allowedTopics: ['p.events.raw', 'p.jobs.chunks'],
    });
    await expect(replayDeadLetters(producer, refused, { deadLetterTopic: DLQ })).rejects.toMatchObject({ code: 'replay_refused' });
    expect(sent).toEqual([]);

    const plan = planReplay(entries, { deadLetterTopic: DLQ, allowedTopics: ['p.events.raw', 'p.jobs.chunks'] });
    const result = await replayDeadLetters(producer, plan, { deadLetterTopic: DLQ });
    expect(sent.map(([topic, messages]) => [topic, messages.map((m) => m.headers?.[REPLAYED_FROM_HEADER])])).toEqual([
      ['p.events.raw', [`${DLQ}/0/1`, `${DLQ}/1/1`]],
      ['p.jobs.chunks', [`${DLQ}/0/2`]],
    ]);
    expect(result.replayed.map((r) => [r.topic, r.entries.length])).toEqual([
      ['p.events.raw', 2],
      ['p.jobs.chunks', 1],
    ]);
  });

  it('finds earlier replays that failed again', () => {
    const original = toDeadLetterEntry(letter(0, '5'));
    const other = toDeadLetterEntry(letter(1, '5'));
    const failedAgain: DeadLetterEntry = toDeadLetterEntry(letter(2, '9', 'invalid_json', source({ headers: { [REPLAYED_FROM_HEADER]: `${DLQ}/0/5` } })));
    const found = earlierReplays([original, other], [original, other, failedAgain], DLQ);
    expect([...found.entries()].map(([origin, es]) => [origin, es.map(entryPosition)])).toEqual([['0/5', ['2/9']]]);
  });
});

describe('deadLetterAccountId', () => {
  const of = (key: string | null, value: string | null) =>
    deadLetterAccountId({ key: key === null ? null : Buffer.from(key), value: value === null ? null : Buffer.from(value) });
  it('takes the account from the value and the key, which must agree', () => {
    expect(of('acc_1:evt', JSON.stringify({ accountId: 'acc_1' }))).toBe('acc_1');
    expect(of('acc_1:evt', JSON.stringify({ accountId: 'acc_2' }))).toBeUndefined();
    expect(of(null, JSON.stringify({ accountId: 'acc_3' }))).toBe('acc_3');
  });
  it('falls back to the key for a value that is not JSON, and is undefined without either', () => {
    expect(of('acc_1:evt', '{not json')).toBe('acc_1');
    expect(of('job-key', '{not json')).toBeUndefined();
    expect(of(null, null)).toBeUndefined();
    expect(of(':evt', null)).toBeUndefined();
  });
});
