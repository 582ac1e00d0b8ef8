import { describe, expect, it } from 'vitest';
import { parseInvocation, requestFor, UsageError } from './cli.js';
import { type AdminsCommand, adminsRequestFor } from './admins-commands.js';
import { formatSuccess } from './format.js';

/** The admin CLI's access commands (issue 17): key scopes and types, suspension, browser origins. */
describe('admin CLI access commands', () => {
  it.each([
    [['keys', 'create', 'acc_1', '--scopes', 'events:write,events:read'], { kind: 'keys create', accountId: 'acc_1', scopes: ['events:write', 'events:read'] }],
    [['keys', 'create', 'acc_1', '--type', 'publishable'], { kind: 'keys create', accountId: 'acc_1', type: 'publishable' }],
    [['accounts', 'suspend', 'acc_1', '--reason', 'fraud'], { kind: 'accounts suspend', accountId: 'acc_1', reason: 'fraud' }],
    [['accounts', 'resume', 'acc_1'], { kind: 'accounts resume', accountId: 'acc_1' }],
    [
      ['origins', 'set', 'acc_1', 'https://a.example', 'http://localhost:5173'],
      { kind: 'origins set', accountId: 'acc_1', origins: ['https://a.example', 'http://localhost:5173'] },
    ],
    [['origins', 'set', 'acc_1'], { kind: 'origins set', accountId: 'acc_1', origins: [] }],
    [['publishable-ids', 'set', 'acc_1', 'shared'], { kind: 'publishable-ids set', accountId: 'acc_1', mode: 'shared' }],
  ])('parses %j', (argv, command) => {
    expect(parseInvocation(argv)).toEqual({ command, json: false });
  });

  it.each([
    [['keys', 'create', 'acc_1', '--scopes', 'events:delete'], /--scopes takes/],
    [['keys', 'create', 'acc_1', '--type', 'public'], /--type must be one of secret, publishable/],
    [['accounts', 'suspend', 'acc_1'], /needs --reason/],
    [['accounts', 'suspend', 'acc_1', '--reason', '  '], /needs --reason/],
    [['accounts', 'resume', 'acc_1', '--scopes', 'x'], /--scopes does not apply/],
    [['origins', 'set'], /takes <accountId>/],
    [['publishable-ids', 'set', 'acc_1', 'both'], /takes <accountId> separate\|shared/],
    [['publishable-ids', 'set', 'acc_1'], /takes <accountId> separate\|shared|<mode>/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseInvocation(argv)).toThrow(UsageError);
    expect(() => parseInvocation(argv)).toThrow(message);
  });

  it('builds the admin API requests', () => {
    expect(requestFor({ kind: 'keys create', accountId: 'acc_1', scopes: ['events:read'], type: 'secret' })).toEqual({
      method: 'POST',
      path: '/admin/v1/accounts/acc_1/keys',
      body: { scopes: ['events:read'], type: 'secret' },
    });
    expect(requestFor({ kind: 'accounts suspend', accountId: 'acc_1', reason: 'fraud' })).toEqual({
      method: 'POST',
      path: '/admin/v1/accounts/acc_1/suspend',
      body: { reason: 'fraud' },
    });
    expect(requestFor({ kind: 'accounts resume', accountId: 'acc_1' })).toEqual({ method: 'POST', path: '/admin/v1/accounts/acc_1/resume', body: {} });
    expect(requestFor({ kind: 'publishable-ids set', accountId: 'acc_1', mode: 'separate' })).toEqual({
      method: 'PUT',
      path: '/admin/v1/accounts/acc_1/publishable-event-ids',
      body: { mode: 'separate' },
    });
    expect(requestFor({ kind: 'origins set', accountId: 'acc_1', origins: [] })).toEqual({
      method: 'PUT',
      path: '/admin/v1/accounts/acc_1/allowed-origins',
      body: { origins: [] },
    });
  });

  it('prints scopes, type, suspension and origins', () => {
    const key = {
      id: 'key_1',
      accountId: 'acc_1',
      name: 'web',
      prefix: 'svc_pub_Ab3dE9',
      createdAt: '2026-01-03T00:00:00.000Z',
      revokedAt: null,
      scopes: ['events:write'],
      type: 'publishable',
    };
    expect(formatSuccess({ kind: 'keys create', accountId: 'acc_1' }, { apiKey: 'svc_pub_X', key })).toContain('type: publishable, scopes: events:write');
    expect(formatSuccess({ kind: 'keys list', accountId: 'acc_1' }, { keys: [key] })).toMatch(/key_1 +web +svc_pub_Ab3dE9 +publishable +events:write +2026/);
    const account = {
      id: 'acc_1',
      name: 'Acme',
      plan: 'pro',
      createdAt: 'c',
      updatedAt: 'u',
      suspension: { reason: 'fraud', suspendedAt: 't' },
      allowedOrigins: ['https://a.example'],
    };
    expect(formatSuccess({ kind: 'accounts suspend', accountId: 'acc_1', reason: 'fraud' }, account)).toBe('account acc_1 is suspended since t: fraud\n');
    expect(formatSuccess({ kind: 'accounts show', accountId: 'acc_1' }, account)).toContain(
      '  status:  suspended since t: fraud\n  origins: https://a.example\n',
    );
    expect(formatSuccess({ kind: 'publishable-ids set', accountId: 'acc_1', mode: 'shared' }, { ...account, publishableEventIds: 'shared' })).toContain(
      "share the secret keys' space",
    );
    expect(formatSuccess({ kind: 'publishable-ids set', accountId: 'acc_1', mode: 'separate' }, account)).toContain('a namespace of their own');
    expect(formatSuccess({ kind: 'origins set', accountId: 'acc_1', origins: [] }, { ...account, allowedOrigins: undefined })).toBe(
      'account acc_1 allows no browser origins\n',
    );
  });
});

describe('admin CLI commands for named admins, the audit log and owners (issue 17)', () => {
  it.each([
    [['admins', 'list'], { kind: 'admins list' }, { method: 'GET', path: '/admin/v1/admins' }],
    [
      ['admins', 'create', 'ada', '--role', 'operator'],
      { kind: 'admins create', name: 'ada', role: 'operator' },
      { method: 'POST', path: '/admin/v1/admins', body: { name: 'ada', role: 'operator' } },
    ],
    [['admins', 'revoke', 'adm_1'], { kind: 'admins revoke', credentialId: 'adm_1' }, { method: 'POST', path: '/admin/v1/admins/adm_1/revoke' }],
    [
      ['owners', 'remove', 'acc_1', 'a@b.io'],
      { kind: 'owners remove', accountId: 'acc_1', email: 'a@b.io' },
      { method: 'DELETE', path: '/admin/v1/accounts/acc_1/owners/a%40b.io' },
    ],
    [
      ['owners', 'remove-second-factor', 'acc_1', 'a@b.io'],
      { kind: 'owners remove-second-factor', accountId: 'acc_1', email: 'a@b.io' },
      { method: 'POST', path: '/admin/v1/accounts/acc_1/owners/a%40b.io/remove-second-factor' },
    ],
    [
      ['owners', 'reset-password', 'acc_1', 'a@b.io'],
      { kind: 'owners reset-password', accountId: 'acc_1', email: 'a@b.io', passwordStdin: false },
      { method: 'POST', path: '/admin/v1/accounts/acc_1/owners/a%40b.io/reset-password', body: {} },
    ],
    [
      ['audit', '--account', 'acc_1', '--actor', 'ada', '--from', '2026-01-01T00:00:00Z', '--limit', '20', '--cursor', 'abc'],
      { kind: 'audit', accountId: 'acc_1', actor: 'ada', from: '2026-01-01T00:00:00Z', limit: '20', cursor: 'abc' },
      { method: 'GET', path: '/admin/v1/audit?accountId=acc_1&actor=ada&from=2026-01-01T00%3A00%3A00Z&limit=20&cursor=abc' },
    ],
  ])('parses %j and asks the API', (argv, command, request) => {
    const parsed = parseInvocation(argv);
    expect(parsed.command).toEqual(command);
    expect(adminsRequestFor(parsed.command as AdminsCommand)).toEqual(request);
  });

  it.each([
    [['admins', 'create', 'ada'], /needs --role operator\|admin/],
    [['admins', 'create', 'ada', '--role', 'root'], /needs --role/],
    [['audit', '--from', 'yesterday'], /--from must be an ISO 8601 time/],
    [['audit', '--limit', '0'], /--limit must be/],
    [['audit', 'acc_1'], /unknown command "audit acc_1"/],
    [['admins', 'revoke', 'adm_1', '--role', 'admin'], /--role does not apply/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseInvocation(argv)).toThrow(message);
  });

  it('keeps --password-stdin for owners create', () => {
    expect(parseInvocation(['owners', 'create', 'acc_1', 'a@b.io', '--password-stdin']).command).toMatchObject({ passwordStdin: true });
  });

  it('prints a new token once, and the audit log with the next cursor', () => {
    const created = formatSuccess(
      { kind: 'admins create', name: 'ada', role: 'operator' },
      {
        token: 'adm_TOKEN',
        admin: { id: 'adm_1', name: 'ada', role: 'operator', prefix: 'adm_TOK', createdAt: 'x', revokedAt: null, source: 'control-plane' },
      },
    );
    expect(created).toContain('adm_TOKEN');
    expect(created).toContain('will not be shown again');
    const audit = formatSuccess(
      { kind: 'audit' },
      {
        records: [
          {
            at: '2026-01-01T00:00:00.000Z',
            actor: { type: 'admin', name: 'ada' },
            action: 'account.suspend',
            accountId: 'acc_1',
            target: null,
            ip: '10.0.0.1',
          },
        ],
        nextCursor: 'NEXT',
      },
    );
    expect(audit).toMatch(/admin:ada\s+account\.suspend\s+acc_1\s+-\s+10\.0\.0\.1/);
    expect(audit).toContain('--cursor NEXT');
  });
});
