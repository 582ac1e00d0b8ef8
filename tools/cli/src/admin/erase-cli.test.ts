import { describe, expect, it } from 'vitest';
import { type CliIo, parseInvocation, runCli, UsageError } from './cli.js';

const result = {
  id: 'er_1',
  accountId: 'acc_1',
  type: 'email',
  identifierHash: 'a'.repeat(64),
  erasedAt: '2026-11-27T00:00:00.000Z',
  counts: { events: 3, crmRecords: 1, pendingLinks: 0 },
  complete: true,
};

function fakeIo(stdin = '') {
  const calls: { url: string; init: RequestInit }[] = [];
  let out = '';
  let err = '';
  const io: CliIo = {
    env: { ADMIN_TOKEN: 'tok' },
    stdout: (t) => void (out += t),
    stderr: (t) => void (err += t),
    readStdin: async () => stdin,
    fetch: (async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      return new Response(JSON.stringify(result), { status: 200, headers: { 'content-type': 'application/json' } });
    }) as typeof fetch,
  };
  return { io, calls, out: () => out, err: () => err };
}

describe('ingest admin erase', () => {
  it('parses <accountId> <type> <value>', () => {
    expect(parseInvocation(['erase', 'acc_1', 'email', 'ada@example.com'])).toEqual({
      command: { kind: 'erase', accountId: 'acc_1', type: 'email', value: 'ada@example.com' },
      json: false,
    });
    expect(parseInvocation(['erase', 'acc_1', 'domain', 'example.com', '--json']).json).toBe(true);
  });

  it.each([
    [['erase'], /takes <accountId>/],
    [['erase', 'acc_1', 'email'], /takes <accountId>/],
    [['erase', 'acc_1', 'email', 'a@b.co', 'extra'], /takes <accountId>/],
    [['erase', 'acc_1', 'phone', '+1'], /type is one of email, domain/],
    [['erase', 'acc_1', 'email', '  '], /takes <accountId>/],
    [['erase', 'acc_1', 'email', 'a@b.co', '--plan', 'pro'], /--plan does not apply/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseInvocation(argv)).toThrow(UsageError);
    expect(() => parseInvocation(argv)).toThrow(message);
  });

  it('posts the identifier to the erasure route and prints the counts', async () => {
    const { io, calls, out } = fakeIo();
    expect(await runCli(['erase', 'acc 1', 'email', 'ada@example.com'], io)).toBe(0);
    expect(calls[0]?.url).toBe('http://127.0.0.1:3200/admin/v1/accounts/acc%201/erasures');
    expect(calls[0]?.init.method).toBe('POST');
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({ type: 'email', value: 'ada@example.com' });
    expect(out()).toContain('events deleted from ClickHouse: 3');
    expect(out()).toContain('complete');
    // The output names the erasure by hash, never by the email.
    expect(out()).not.toContain('ada@');
  });

  it('reads the value from stdin for "-", so it is not in the shell history', async () => {
    const { io, calls } = fakeIo('ada@example.com\n');
    expect(await runCli(['erase', 'acc_1', 'email', '-'], io)).toBe(0);
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({ type: 'email', value: 'ada@example.com' });
  });

  it('is in the usage text', async () => {
    const { io, out } = fakeIo();
    expect(await runCli(['help'], io)).toBe(0);
    expect(out()).toContain('erase <accountId> email|domain <value|->');
  });

  it('erasures reapply posts to the reapply route', async () => {
    expect(parseInvocation(['erasures', 'reapply'])).toEqual({ command: { kind: 'erasures reapply' }, json: false });
    expect(() => parseInvocation(['erasures', 'reapply', 'x'])).toThrow(/takes no arguments/);
    const { io, calls } = fakeIo();
    expect(await runCli(['erasures', 'reapply', '--json'], io)).toBe(0);
    expect(calls[0]?.url).toBe('http://127.0.0.1:3200/admin/v1/erasures/reapply');
    expect(calls[0]?.init.method).toBe('POST');
    expect(calls[0]?.init.body).toBeUndefined();
  });
});
