import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type ConsumedMessage, TOPICS } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { runIngest } from '../ingest.js';
import { backupTopicKeys, decodeRecord, encodeRecord } from './topic-dump.js';

const message = (fields: Partial<ConsumedMessage>): ConsumedMessage => ({
  topic: 't',
  partition: 2,
  offset: '41',
  key: Buffer.from('acc_1/main'),
  value: Buffer.from('{"v":1}'),
  headers: {},
  timestamp: 1_700_000_000_000,
  ...fields,
});

describe('backupTopicKeys', () => {
  it('holds every compacted control topic, the billing ledger, the audit log and the identity map, and no event topic', () => {
    const names = backupTopicKeys().map((k) => TOPICS[k].name);
    const control = Object.values(TOPICS)
      .filter((t) => t.name.startsWith('control.') && t.config['cleanup.policy'] === 'compact')
      .map((t) => t.name);
    expect(control).toEqual(
      expect.arrayContaining(['control.accounts', 'control.apikeys', 'control.owners', 'control.admins', 'control.mappings', 'control.crm-credentials']),
    );
    expect(names.sort()).toEqual([...control, 'billing.ledger', 'audit.log', 'identities'].sort());
    for (const skipped of ['events.raw', 'events.unique', 'dedupe.changelog', 'jobs.chunks']) expect(names).not.toContain(skipped);
  });
});

describe('the topic dump format', () => {
  it('round-trips text, binary bytes, tombstones, null keys and headers exactly', () => {
    const binary = Buffer.from([0xff, 0x00, 0xc3, 0x28, 0x0a]);
    const cases = [
      message({}),
      message({ value: null }),
      message({ key: null, headers: { 'content-type': 'application/json', trace: 'a\tb' } }),
      message({ key: binary, value: binary }),
      message({ value: Buffer.from('{"note":"line\\nbreak é 🎉"}') }),
    ];
    for (const m of cases) {
      const line = encodeRecord(m);
      expect(line.endsWith('\n')).toBe(true);
      expect(line.slice(0, -1)).not.toContain('\n');
      const back = decodeRecord(line, 'test');
      expect(back).toEqual({ partition: m.partition, key: m.key, value: m.value, headers: m.headers });
    }
  });

  it('keeps UTF-8 text readable and only other bytes in base64', () => {
    expect(JSON.parse(encodeRecord(message({})))).toEqual({ p: 2, o: '41', ts: 1_700_000_000_000, k: 'acc_1/main', v: '{"v":1}' });
    expect(JSON.parse(encodeRecord(message({ value: Buffer.from([0xff]) })))).toMatchObject({ v64: '/w==' });
    expect(JSON.parse(encodeRecord(message({ value: null })))).toMatchObject({ v: null });
  });

  it('names the line of a damaged record', () => {
    expect(() => decodeRecord('{"p":', 'control.owners line 3')).toThrow(/control\.owners line 3/);
    expect(() => decodeRecord('{"k":"x"}', 'control.owners line 4')).toThrow(/no partition/);
  });
});

describe('ingest backup / restore arguments', () => {
  const run = async (argv: string[]) => {
    let stdout = '';
    let stderr = '';
    const code = await runIngest(argv, { env: {}, stdout: (t) => (stdout += t), stderr: (t) => (stderr += t) });
    return { code, stdout, stderr };
  };

  it('needs the directory, and takes --force on restore only', async () => {
    expect(await run(['backup'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--to DIR is required') });
    expect(await run(['restore'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--from DIR is required') });
    expect(await run(['backup', '--to', '/tmp/x', '--force'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--force and --only are options of restore'),
    });
    expect(await run(['restore', '--from', '/tmp/x', '--to', '/tmp/y'])).toMatchObject({ code: 2 });
    expect(await run(['restore', '--from', '/tmp/x', '--only', 'redis'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--only takes kafka or clickhouse'),
    });
    expect(await run(['backup', '--to', '/tmp/x', '--only', 'kafka'])).toMatchObject({ code: 2 });
    expect(await run(['backup', 'help'])).toMatchObject({ code: 0, stdout: expect.stringContaining('usage: ingest backup --to DIR') });
  });

  it('refuses a directory without a manifest before it connects to anything', async () => {
    expect(await run(['restore', '--from', '/nonexistent/backup'])).toMatchObject({ code: 2, stderr: expect.stringContaining('not a backup manifest') });
  });

  it('refuses a manifest that names a file outside its directory', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'manifest-'));
    try {
      const manifest = {
        v: 1,
        startedAt: '',
        finishedAt: '',
        kafka: { topicPrefix: '', topics: [{ name: 'control.accounts', file: '../../etc/passwd', sha256: 'x' }] },
        clickhouse: { serverVersion: '', database: 'ingest', migrations: [], tables: [] },
      };
      await writeFile(join(dir, 'manifest.json'), JSON.stringify(manifest));
      expect(await run(['restore', '--from', dir])).toMatchObject({
        code: 2,
        stderr: expect.stringContaining('names a file outside the backup: ../../etc/passwd'),
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
