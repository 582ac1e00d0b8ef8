import { describe, expect, it } from 'vitest';
import { parseInvocation, UsageError, USAGE } from './cli.js';
import { readersRequestFor } from './readers-commands.js';
import { formatSuccess } from './format.js';

const reader = {
  accountId: 'acc_1',
  user: 'reader_acc_1',
  database: 'ingest',
  tables: ['events', 'usage_hourly'],
  settings: { readonly: 1, max_execution_time: 60 },
  quota: { intervalSeconds: 3600, queries: 1000 },
  exists: true,
};

describe('admin CLI: an account’s ClickHouse reader', () => {
  it.each([
    ['show', 'GET', '/admin/v1/accounts/acc_1/clickhouse-reader'],
    ['create', 'POST', '/admin/v1/accounts/acc_1/clickhouse-reader'],
    ['rotate', 'POST', '/admin/v1/accounts/acc_1/clickhouse-reader/rotate'],
    ['remove', 'DELETE', '/admin/v1/accounts/acc_1/clickhouse-reader'],
  ] as const)('reader %s <accountId> is %s %s', (action, method, path) => {
    const { command } = parseInvocation(['reader', action, 'acc_1']);
    expect(command).toEqual({ kind: `reader ${action}`, accountId: 'acc_1' });
    expect(readersRequestFor(command as Parameters<typeof readersRequestFor>[0])).toEqual({ method, path });
  });

  it('refuses a missing account and flags', () => {
    expect(() => parseInvocation(['reader', 'create'])).toThrow(UsageError);
    expect(() => parseInvocation(['reader', 'create', 'acc_1', '--name', 'x'])).toThrow(/--name does not apply/);
    expect(USAGE).toContain('reader show|create|rotate|remove <accountId>');
  });

  it('prints the password once, on create and rotate, and the limits', () => {
    const out = formatSuccess({ kind: 'reader create', accountId: 'acc_1' }, { ...reader, password: 'pw-shown-once' });
    expect(out).toContain('password: pw-shown-once');
    expect(out).toContain('will not be shown again');
    expect(out).toContain('max_execution_time=60');
    expect(formatSuccess({ kind: 'reader show', accountId: 'acc_1' }, reader)).not.toContain('password');
    expect(formatSuccess({ kind: 'reader show', accountId: 'acc_1' }, { ...reader, exists: false })).toBe('account acc_1 has no ClickHouse reader\n');
    expect(formatSuccess({ kind: 'reader remove', accountId: 'acc_1' }, { ...reader, exists: false })).toBe(
      'removed ClickHouse reader reader_acc_1 of account acc_1\n',
    );
  });
});
