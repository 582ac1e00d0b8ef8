import { describe, expect, it } from 'vitest';
import { type CliIo, parseInvocation, requestFor, runCli, UsageError } from './cli.js';
import { formatProblem, formatSuccess } from './format.js';
import { table } from '../frame.js';

describe('admin CLI argument parsing', () => {
  it.each([
    [['accounts', 'create', '--name', 'Acme'], { kind: 'accounts create', name: 'Acme', plan: 'free' }],
    [['accounts', 'create', '--name', 'Acme', '--plan', 'growth'], { kind: 'accounts create', name: 'Acme', plan: 'growth' }],
    [['accounts', 'list'], { kind: 'accounts list' }],
    [['accounts', 'show', 'acc_1'], { kind: 'accounts show', accountId: 'acc_1' }],
    [['plan', 'set', 'acc_1', 'pro'], { kind: 'plan set', accountId: 'acc_1', plan: 'pro' }],
    [['keys', 'create', 'acc_1'], { kind: 'keys create', accountId: 'acc_1' }],
    [['keys', 'create', 'acc_1', '--name', 'ci'], { kind: 'keys create', accountId: 'acc_1', name: 'ci' }],
    [['keys', 'list', 'acc_1'], { kind: 'keys list', accountId: 'acc_1' }],
    [['keys', 'revoke', 'acc_1', 'key_1'], { kind: 'keys revoke', accountId: 'acc_1', keyId: 'key_1' }],
    [['help'], { kind: 'help' }],
    [[], { kind: 'help' }],
    [['keys', 'list', 'acc_1', '--help'], { kind: 'help' }],
  ])('parses %j', (argv, command) => {
    expect(parseInvocation(argv)).toEqual({ command, json: false });
  });

  it('takes --json anywhere', () => {
    expect(parseInvocation(['--json', 'accounts', 'list'])).toEqual({ command: { kind: 'accounts list' }, json: true });
    expect(parseInvocation(['keys', 'list', 'acc_1', '--json'])).toEqual({ command: { kind: 'keys list', accountId: 'acc_1' }, json: true });
  });

  it.each([
    [['accounts'], /unknown command "accounts"/],
    [['accounts', 'delete', 'acc_1'], /unknown command "accounts delete"/],
    [['frobnicate'], /unknown command "frobnicate"/],
    [['accounts', 'create'], /--name/],
    [['accounts', 'create', '--name', '  '], /--name/],
    [['accounts', 'create', '--name', 'A', '--plan', 'enterprise'], /unknown plan "enterprise"/],
    [['plan', 'set', 'acc_1', 'gold'], /unknown plan "gold"/],
    [['plan', 'set', 'acc_1'], /takes <accountId> <plan>/],
    [['accounts', 'show'], /takes <accountId>/],
    [['accounts', 'list', 'extra'], /takes no arguments/],
    [['keys', 'revoke', 'acc_1'], /takes <accountId> <keyId>/],
    [['keys', 'list', ''], /<accountId> must not be empty/],
    [['keys', 'list', 'acc_1', '--plan', 'pro'], /--plan does not apply/],
    [['accounts', 'list', '--verbose'], /verbose/],
    [['accounts', 'create', '--name'], /--name/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseInvocation(argv)).toThrow(UsageError);
    expect(() => parseInvocation(argv)).toThrow(message);
  });
});

describe('admin CLI requests', () => {
  it('maps commands to admin API requests, escaping ids', () => {
    expect(requestFor({ kind: 'accounts create', name: 'A', plan: 'pro' })).toEqual({
      method: 'POST',
      path: '/admin/v1/accounts',
      body: { name: 'A', plan: 'pro' },
    });
    expect(requestFor({ kind: 'plan set', accountId: 'acc_1', plan: 'growth' })).toEqual({
      method: 'PUT',
      path: '/admin/v1/accounts/acc_1/plan',
      body: { plan: 'growth' },
    });
    expect(requestFor({ kind: 'keys create', accountId: 'acc_1' })).toEqual({ method: 'POST', path: '/admin/v1/accounts/acc_1/keys', body: {} });
    expect(requestFor({ kind: 'keys revoke', accountId: 'a/b', keyId: 'k?1' })).toEqual({ method: 'POST', path: '/admin/v1/accounts/a%2Fb/keys/k%3F1/revoke' });
    expect(requestFor({ kind: 'accounts show', accountId: '../x' }).path).toBe('/admin/v1/accounts/..%2Fx');
  });
});

const account = { id: 'acc_1', name: 'Acme', plan: 'pro', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-02T00:00:00.000Z' };
const key = { id: 'key_1', accountId: 'acc_1', name: 'ci', prefix: 'svc_live_Ab3dE9', createdAt: '2026-01-03T00:00:00.000Z', revokedAt: null };

describe('admin CLI output', () => {
  it('prints the plaintext key once, with the warning', () => {
    const out = formatSuccess({ kind: 'keys create', accountId: 'acc_1' }, { apiKey: 'svc_live_SECRET', key });
    expect(out).toContain('created API key key_1 (ci) for account acc_1');
    expect(out).toContain('\n  svc_live_SECRET\n');
    expect(out).toContain('will not be shown again');
  });

  it('prints accounts and keys as aligned tables', () => {
    const accounts = formatSuccess({ kind: 'accounts list' }, { accounts: [account, { ...account, id: 'acc_22', name: 'B' }] });
    expect(accounts.split('\n')).toEqual([
      'ID      NAME  PLAN  CREATED',
      'acc_1   Acme  pro   2026-01-01T00:00:00.000Z',
      'acc_22  B     pro   2026-01-01T00:00:00.000Z',
      '',
    ]);
    const keys = formatSuccess({ kind: 'keys list', accountId: 'acc_1' }, { keys: [key, { ...key, id: 'key_2', revokedAt: '2026-02-01T00:00:00.000Z' }] });
    expect(keys).toMatch(/key_1 +ci +svc_live_Ab3dE9 +secret +2026-01-03T00:00:00.000Z +active\n/);
    expect(keys).toMatch(/key_2 +ci +svc_live_Ab3dE9 +secret +2026-01-03T00:00:00.000Z +revoked 2026-02-01T00:00:00.000Z\n/);
    expect(formatSuccess({ kind: 'keys list', accountId: 'acc_1' }, { keys: [] })).toBe('no API keys\n');
    expect(formatSuccess({ kind: 'accounts list' }, { accounts: [] })).toBe('no accounts\n');
  });

  it('prints an account, a plan change and a revocation', () => {
    expect(formatSuccess({ kind: 'accounts show', accountId: 'acc_1' }, account)).toBe(
      'account acc_1\n  name:    Acme\n  plan:    pro\n  created: 2026-01-01T00:00:00.000Z\n  updated: 2026-01-02T00:00:00.000Z\n',
    );
    expect(formatSuccess({ kind: 'plan set', accountId: 'acc_1', plan: 'pro' }, account)).toBe('account acc_1 is now on plan pro\n');
    expect(formatSuccess({ kind: 'keys revoke', accountId: 'acc_1', keyId: 'key_1' }, { ...key, revokedAt: '2026-02-01T00:00:00.000Z' })).toBe(
      'revoked API key key_1 (ci) of account acc_1 at 2026-02-01T00:00:00.000Z\n',
    );
  });

  it('prints problems as "error: <status> <title>: <detail>" plus field errors', () => {
    const out = formatProblem(400, 'Bad Request', {
      type: '/problems/validation-error',
      title: 'Request is invalid',
      status: 400,
      detail: 'The request body is invalid.',
      requestId: 'req-1',
      errors: [{ field: '/plan', code: 'invalid_value', message: 'must be equal to one of the allowed values' }],
    });
    expect(out).toBe(
      'error: 400 Request is invalid: The request body is invalid.\n  /plan: must be equal to one of the allowed values (invalid_value)\n  requestId: req-1\n',
    );
    expect(formatProblem(502, 'Bad Gateway', undefined)).toBe('error: 502 Bad Gateway\n');
  });

  it('pads every column but the last', () => {
    expect(
      table([
        ['a', 'bb'],
        ['ccc', 'd'],
      ]),
    ).toBe('a    bb\nccc  d\n');
  });
});

function fakeIo(env: Record<string, string | undefined>, respond: (url: string, init: RequestInit) => Response) {
  const calls: { url: string; init: RequestInit }[] = [];
  let stdout = '';
  let stderr = '';
  const io: CliIo = {
    env,
    fetch: (async (url: string, init: RequestInit) => {
      calls.push({ url, init });
      return respond(url, init);
    }) as typeof fetch,
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
  };
  return { io, calls, out: () => stdout, err: () => stderr };
}

const jsonResponse = (status: number, body: unknown, type = 'application/json') =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': type } });

describe('runCli', () => {
  it('sends the token and the JSON body to ADMIN_URL and prints the result', async () => {
    const { io, calls, out } = fakeIo({ ADMIN_URL: 'http://admin.test:8080/', ADMIN_TOKEN: 'tok' }, () => jsonResponse(201, account));
    expect(await runCli(['accounts', 'create', '--name', 'Acme', '--plan', 'pro'], io)).toBe(0);
    expect(calls).toHaveLength(1);
    expect(calls[0]?.url).toBe('http://admin.test:8080/admin/v1/accounts');
    expect(calls[0]?.init.method).toBe('POST');
    expect(calls[0]?.init.headers).toMatchObject({ authorization: 'Bearer tok', 'content-type': 'application/json' });
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({ name: 'Acme', plan: 'pro' });
    expect(out()).toContain('created account acc_1');
  });

  it('defaults ADMIN_URL to the admin listener, 127.0.0.1:3200 and sends no body on GET', async () => {
    const { io, calls, out } = fakeIo({ ADMIN_TOKEN: 'tok' }, () => jsonResponse(200, { accounts: [account] }));
    expect(await runCli(['accounts', 'list', '--json'], io)).toBe(0);
    expect(calls[0]?.url).toBe('http://127.0.0.1:3200/admin/v1/accounts');
    expect(calls[0]?.init.body).toBeUndefined();
    expect(JSON.parse(out())).toEqual({ accounts: [account] });
  });

  it('exits 1 with the problem on stderr', async () => {
    const problem = { type: '/problems/unauthorized', title: 'Missing or invalid API key', status: 401, detail: 'Send the admin token.', requestId: 'r1' };
    const { io, out, err } = fakeIo({ ADMIN_TOKEN: 'wrong' }, () => jsonResponse(401, problem, 'application/problem+json'));
    expect(await runCli(['accounts', 'list'], io)).toBe(1);
    expect(err()).toMatch(/^error: 401 Missing or invalid API key: Send the admin token\.\n/);
    expect(out()).toBe('');
  });

  it('exits 1 when the API cannot be reached', async () => {
    const { io, err } = fakeIo({ ADMIN_TOKEN: 'tok' }, () => {
      throw new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:3200') });
    });
    expect(await runCli(['accounts', 'list'], io)).toBe(1);
    expect(err()).toBe('error: cannot reach the admin API at http://127.0.0.1:3200: fetch failed (connect ECONNREFUSED 127.0.0.1:3200)\n');
  });

  it('exits 2 without ADMIN_TOKEN, and on usage errors, without calling the API', async () => {
    const noToken = fakeIo({}, () => jsonResponse(200, {}));
    expect(await runCli(['accounts', 'list'], noToken.io)).toBe(2);
    expect(noToken.err()).toContain('ADMIN_TOKEN is not set');
    const usage = fakeIo({ ADMIN_TOKEN: 'tok' }, () => jsonResponse(200, {}));
    expect(await runCli(['keys', 'revoke', 'acc_1'], usage.io)).toBe(2);
    expect(usage.err()).toContain('usage: npm run admin');
    expect(noToken.calls.length + usage.calls.length).toBe(0);
  });

  it('prints help without a token', async () => {
    const { io, out } = fakeIo({}, () => jsonResponse(200, {}));
    expect(await runCli(['help'], io)).toBe(0);
    expect(out()).toContain('keys revoke <accountId> <keyId>');
  });
});

describe('owners commands', () => {
  const owner = { id: 'own_1', accountId: 'acc_1', email: 'ada@example.com', createdAt: '2026-01-01T00:00:00.000Z' };

  it('parses owners create and list', () => {
    expect(parseInvocation(['owners', 'create', 'acc_1', 'ada@example.com']).command).toEqual({
      kind: 'owners create',
      accountId: 'acc_1',
      email: 'ada@example.com',
      passwordStdin: false,
    });
    expect(parseInvocation(['owners', 'create', 'acc_1', 'ada@example.com', '--password-stdin']).command).toMatchObject({ passwordStdin: true });
    expect(parseInvocation(['owners', 'list', 'acc_1']).command).toEqual({ kind: 'owners list', accountId: 'acc_1' });
    expect(() => parseInvocation(['owners', 'create', 'acc_1'])).toThrow(UsageError);
  });

  it('sends no password when none is given (the API generates one) and prints the generated one once', async () => {
    const { io, calls, out } = fakeIo({ ADMIN_TOKEN: 'tok' }, () => jsonResponse(201, { owner, password: 'generated-password-1' }));
    expect(await runCli(['owners', 'create', 'acc_1', 'ada@example.com'], io)).toBe(0);
    expect(calls[0]?.url).toBe('http://127.0.0.1:3200/admin/v1/accounts/acc_1/owners');
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({ email: 'ada@example.com' });
    expect(out()).toContain('password: generated-password-1');
  });

  it('takes the password from OWNER_PASSWORD or from stdin', async () => {
    const fromEnv = fakeIo({ ADMIN_TOKEN: 'tok', OWNER_PASSWORD: 'from-the-environment' }, () => jsonResponse(201, { owner }));
    expect(await runCli(['owners', 'create', 'acc_1', 'ada@example.com'], fromEnv.io)).toBe(0);
    expect(JSON.parse(String(fromEnv.calls[0]?.init.body))).toEqual({ email: 'ada@example.com', password: 'from-the-environment' });
    expect(fromEnv.out()).not.toContain('password:');

    const fromStdin = fakeIo({ ADMIN_TOKEN: 'tok' }, () => jsonResponse(201, { owner }));
    fromStdin.io.readStdin = async () => 'typed-into-stdin-123\n';
    expect(await runCli(['owners', 'create', 'acc_1', 'ada@example.com', '--password-stdin'], fromStdin.io)).toBe(0);
    expect(JSON.parse(String(fromStdin.calls[0]?.init.body))).toEqual({ email: 'ada@example.com', password: 'typed-into-stdin-123' });
  });
});

describe('admin CLI: ledger', () => {
  const record = {
    v: 1 as const,
    kind: 'period_closed' as const,
    accountId: 'acc_1',
    period: '202610',
    at: '2026-11-01T00:00:00.000Z',
    plan: 'pro' as const,
    previousPlan: null,
    limit: 50_000,
    eventsCharged: 1234,
    overageRefused: 7,
    recordedAt: '2026-11-01T02:00:00.000Z',
  };

  it('parses filters and asks the ledger route for them', () => {
    const { command } = parseInvocation(['ledger', '--account', 'acc_1', '--period', '202610', '--csv']);
    expect(command).toEqual({ kind: 'ledger', accountId: 'acc_1', period: '202610', csv: true });
    expect(requestFor(command as Parameters<typeof requestFor>[0])).toEqual({ method: 'GET', path: '/admin/v1/billing/ledger?accountId=acc_1&period=202610' });
    expect(requestFor({ kind: 'ledger', csv: false })).toEqual({ method: 'GET', path: '/admin/v1/billing/ledger' });
    expect(() => parseInvocation(['ledger', '--period', '2026-10'])).toThrow(/YYYYMM/);
    expect(() => parseInvocation(['keys', 'list', 'acc_1', '--csv'])).toThrow(/--csv does not apply/);
  });

  it('prints a table, or CSV with --csv', () => {
    const body = { records: [record, { ...record, kind: 'plan_changed' as const, previousPlan: 'free' as const, at: '2026-10-15T08:00:00.000Z' }] };
    const text = formatSuccess({ kind: 'ledger', csv: false }, body);
    expect(text.split('\n')[0]).toMatch(/^PERIOD\s+ACCOUNT\s+KIND\s+AT\s+PLAN\s+LIMIT\s+CHARGED\s+REFUSED$/);
    expect(text).toContain('month closed');
    expect(text).toContain('plan free -> pro');
    expect(formatSuccess({ kind: 'ledger', csv: true }, { records: [record] })).toBe(
      'kind,accountId,period,at,plan,previousPlan,limit,eventsCharged,overageRefused,recordedAt\r\n' +
        'period_closed,acc_1,202610,2026-11-01T00:00:00.000Z,pro,,50000,1234,7,2026-11-01T02:00:00.000Z\r\n',
    );
    expect(formatSuccess({ kind: 'ledger', csv: false }, { records: [] })).toBe('no ledger records\n');
  });
});
