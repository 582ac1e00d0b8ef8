import { type ConsumedMessage, type DeadLetterEntry, toDeadLetterEntry, toDeadLetterMessage } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { DEFAULT_LIST_LIMIT, parseInvocation, positions, runCli, UsageError } from './cli.js';
import { bytes, formatList, formatReplayPlan, listJson, printable } from './format.js';

describe('dead-letter CLI argument parsing', () => {
  it.each([
    [['list'], { kind: 'list', limit: DEFAULT_LIST_LIMIT, json: false, showValues: false }],
    [['list', '--code', 'invalid_json', '--limit', '5', '--json'], { kind: 'list', code: 'invalid_json', limit: 5, json: true, showValues: false }],
    [['list', '--show-values'], { kind: 'list', limit: DEFAULT_LIST_LIMIT, json: false, showValues: true }],
    [['replay', '--offset', '0/12'], { kind: 'replay', selection: { positions: ['0/12'] }, yes: false, json: false }],
    [['replay', '--offset', '0/12', '--offset', '2/007', '1/3'], { kind: 'replay', selection: { positions: ['0/12', '2/7', '1/3'] }, yes: false, json: false }],
    [['replay', '--offset', '0/1,0/2,0/1'], { kind: 'replay', selection: { positions: ['0/1', '0/2'] }, yes: false, json: false }],
    [['replay', '--code', 'invalid_json'], { kind: 'replay', selection: { code: 'invalid_json' }, yes: false, json: false }],
    [['replay', '--code', 'invalid_json', '--yes', '--json'], { kind: 'replay', selection: { code: 'invalid_json' }, yes: true, json: true }],
    [['replay', '-y', '--code', 'x'], { kind: 'replay', selection: { code: 'x' }, yes: true, json: false }],
    [['list', '--crm'], { kind: 'list', limit: DEFAULT_LIST_LIMIT, json: false, showValues: false, crm: true }],
    [['replay', '--crm', '--offset', '1/4'], { kind: 'replay', selection: { positions: ['1/4'] }, yes: false, json: false, crm: true }],
    [['replay', '--code', 'crm_permanent', '--crm', '--yes'], { kind: 'replay', selection: { code: 'crm_permanent' }, yes: true, json: false, crm: true }],
    [['help'], { kind: 'help' }],
    [[], { kind: 'help' }],
    [['list', '--help'], { kind: 'help' }],
  ])('parses %j', (argv, command) => {
    expect(parseInvocation(argv)).toEqual(command);
  });

  it.each([
    [['frobnicate'], /unknown command "frobnicate"/],
    [['list', 'extra'], /takes no arguments/],
    [['list', '--limit', '0'], /--limit must be a whole number from 1/],
    [['list', '--limit', '10001'], /--limit/],
    [['list', '--limit', 'ten'], /--limit/],
    [['list', '--limit', '1e3'], /--limit/],
    [['list', '--offset', '0/1'], /--offset does not apply to "list"/],
    [['list', '--yes'], /--yes does not apply to "list"/],
    [['list', '--code', "x' OR 1=1"], /--code must be a code word/],
    [['replay'], /needs --offset <partition>\/<offset> or --code/],
    [['replay', '0/1'], /needs --offset/],
    [['replay', '--offset', '0/1', '--code', 'x'], /either --offset or --code/],
    [['replay', '--offset', '0'], /must look like <partition>\/<offset>/],
    [['replay', '--offset', '0/-1'], /must look like/],
    [['replay', '--offset', 'a/b'], /must look like/],
    [['replay', '--code', 'x', '--limit', '3'], /--limit does not apply to "replay"/],
    [['replay', '--code', 'x', '--show-values'], /--show-values does not apply to "replay"/],
    [['list', '--verbose'], /verbose/],
    [['list', '--code'], /--code/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseInvocation(argv)).toThrow(UsageError);
    expect(() => parseInvocation(argv)).toThrow(message);
  });

  it('normalises positions so they compare equal to those read from Kafka', () => {
    expect(positions(['00/0010', '3/9223372036854775807'])).toEqual(['0/10', '3/9223372036854775807']);
  });
});

describe('dead-letter CLI exit codes without Kafka', () => {
  function io(env: Record<string, string> = {}) {
    const out = { stdout: '', stderr: '' };
    return { out, io: { env, stdout: (t: string) => void (out.stdout += t), stderr: (t: string) => void (out.stderr += t) } };
  }

  it('prints the usage with 0 for help and 2 for a usage error', async () => {
    const help = io();
    expect(await runCli(['help'], help.io)).toBe(0);
    expect(help.out.stdout).toContain('usage: npm run deadletters');
    const bad = io();
    expect(await runCli(['replay'], bad.io)).toBe(2);
    expect(bad.out.stderr).toMatch(/^error: replay needs --offset/);
    expect(bad.out.stderr).toContain('usage: npm run deadletters');
  });

  it('refuses an invalid configuration with 2, naming the variable', async () => {
    const bad = io({ KAFKA_TOPIC_PREFIX: 'has space' });
    expect(await runCli(['list'], bad.io)).toBe(2);
    expect(bad.out.stderr).toMatch(/KAFKA_TOPIC_PREFIX/);
  });
});

const DLQ = 'p.events.deadletter';

function entry(partition: number, offset: string, overrides: Partial<ConsumedMessage> = {}, code = 'invalid_json'): DeadLetterEntry {
  const original: ConsumedMessage = {
    topic: 'p.events.raw',
    partition: 3,
    offset: '45',
    key: Buffer.from('acc_1:ada@example.com'),
    value: Buffer.from('{"email":"ada@example.com", broken'),
    headers: {},
    timestamp: 0,
    ...overrides,
  };
  const out = toDeadLetterMessage('processor-storage', { message: original, code, reason: 'value is not JSON' }, new Date('2026-01-15T10:00:00.000Z'));
  return toDeadLetterEntry({
    topic: DLQ,
    partition,
    offset,
    key: out.key === null ? null : Buffer.from(out.key),
    value: Buffer.from(out.value),
    headers: out.headers ?? {},
    timestamp: 0,
  });
}

describe('dead-letter CLI output', () => {
  it('lists entries as a table with sizes, never contents, by default', () => {
    const text = formatList({ topic: DLQ, entries: [entry(0, '12'), entry(1, '3')], truncated: false, showValues: false });
    expect(text).toMatch(/^POSITION +FAILED AT +CODE +SOURCE +CONSUMER +KEY +VALUE +REASON\n/);
    expect(text).toMatch(/\n0\/12 +2026-01-15T10:00:00\.000Z +invalid_json +p\.events\.raw\/3\/45 +processor-storage +21 B +34 B +value is not JSON\n/);
    expect(text).toContain('2 dead letters in p.events.deadletter');
    expect(text).toContain('--show-values prints them');
    expect(text).not.toContain('ada@example.com');
  });

  it('prints keys and values, quoted, under --show-values', () => {
    const text = formatList({ topic: DLQ, entries: [entry(0, '12', { value: Buffer.from('a\u001b[31mb\nc') })], truncated: false, showValues: true });
    expect(text).toContain('    key:   "acc_1:ada@example.com"\n');
    expect(text).toContain('    value: "a\\u001b[31mb\\nc"\n');
  });

  it('says when more entries exist and when there are none', () => {
    expect(formatList({ topic: DLQ, entries: [entry(0, '1')], truncated: true, code: 'invalid_json', showValues: false })).toContain(
      'showing the oldest 1 dead letter with code invalid_json in p.events.deadletter; more exist',
    );
    expect(formatList({ topic: DLQ, entries: [], truncated: false, code: 'x', showValues: false })).toBe(
      'no dead letters with code x in p.events.deadletter\n',
    );
  });

  it('keeps contents out of --json unless --show-values', () => {
    const plain = JSON.parse(listJson({ topic: DLQ, entries: [entry(0, '12')], truncated: false, showValues: false }));
    expect(plain.entries[0]).toEqual({
      position: '0/12',
      partition: 0,
      offset: '12',
      code: 'invalid_json',
      reason: 'value is not JSON',
      sourceTopic: 'p.events.raw',
      sourcePartition: 3,
      sourceOffset: '45',
      failedAt: '2026-01-15T10:00:00.000Z',
      consumer: 'processor-storage',
      replayedFrom: null,
      keyBytes: 21,
      valueBytes: 34,
    });
    const shown = JSON.parse(listJson({ topic: DLQ, entries: [entry(0, '12')], truncated: false, showValues: true }));
    expect(shown.entries[0]).toMatchObject({ key: 'acc_1:ada@example.com', value: '{"email":"ada@example.com", broken' });
  });

  it('escapes control characters from headers before they reach the terminal', () => {
    const hostile = { ...entry(0, '1'), reason: 'bad\u001b]0;owned\u0007\r\nfake line', code: 'x\u009b' };
    const text = formatList({ topic: DLQ, entries: [hostile], truncated: false, showValues: false });
    expect(text).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
    expect(text).toContain('bad\\x1b]0;owned\\x07\\x0d\\x0afake line');
    expect(printable('ok\ttab')).toBe('ok\\x09tab');
  });

  it('shows what a replay sends where', () => {
    expect(formatReplayPlan([entry(0, '12'), entry(2, '4')], 'would replay')).toBe(
      [
        'would replay 2 dead letters:',
        '  0/12 -> p.events.raw (invalid_json, failed 2026-01-15T10:00:00.000Z, value 34 B)',
        '  2/4 -> p.events.raw (invalid_json, failed 2026-01-15T10:00:00.000Z, value 34 B)',
        '',
      ].join('\n'),
    );
    expect([bytes(10), bytes(2048), bytes(3 * 1024 * 1024)]).toEqual(['10 B', '2.0 KiB', '3.0 MiB']);
  });
});
