import { describe, expect, it } from 'vitest';
import { type CliIo, parseInvocation, runCli, UsageError } from './cli.js';
import { credentialFromEnv, crmRequestFor, formatCrmSuccess, loadBody } from './crm-commands.js';
import { table } from '../frame.js';

describe('admin CLI: CRM command parsing', () => {
  it.each([
    [['mapping', 'put', 'acc_1', 'm.json'], { kind: 'mapping put', accountId: 'acc_1', file: 'm.json' }],
    [['mapping', 'put', 'acc_1', 'm.json', '--if-match', '3'], { kind: 'mapping put', accountId: 'acc_1', file: 'm.json', ifMatch: 3 }],
    [['mapping', 'put', 'acc_1', 'm.json', '--skip-check'], { kind: 'mapping put', accountId: 'acc_1', file: 'm.json', skipCheck: true }],
    [['mapping', 'get', 'acc_1'], { kind: 'mapping get', accountId: 'acc_1' }],
    [['mapping', 'get', 'acc_1', '--version', '2'], { kind: 'mapping get', accountId: 'acc_1', version: 2 }],
    [['mapping', 'versions', 'acc_1'], { kind: 'mapping versions', accountId: 'acc_1' }],
    [['mapping', 'dry-run', 'acc_1', 'e.json'], { kind: 'mapping dry-run', accountId: 'acc_1', eventFile: 'e.json' }],
    [
      ['mapping', 'dry-run', 'acc_1', 'e.json', '--mapping', 'd.json'],
      { kind: 'mapping dry-run', accountId: 'acc_1', eventFile: 'e.json', mappingFile: 'd.json' },
    ],
    [
      ['credentials', 'put', 'acc_1', 'main', '--type', 'hubspot'],
      { kind: 'credentials put', accountId: 'acc_1', name: 'main', type: 'hubspot', fromStdin: false },
    ],
    [
      ['credentials', 'put', 'acc_1', 'hooks', '--type', 'webhook', '--stdin'],
      { kind: 'credentials put', accountId: 'acc_1', name: 'hooks', type: 'webhook', fromStdin: true },
    ],
    [['credentials', 'list', 'acc_1'], { kind: 'credentials list', accountId: 'acc_1' }],
  ])('parses %j', (argv, command) => {
    expect(parseInvocation(argv)).toEqual({ command, json: false });
  });

  it.each([
    [['mapping', 'get', 'acc_1', '--version', '0'], /--version must be a version number/],
    [['mapping', 'put', 'acc_1', 'm.json', '--if-match', 'x'], /--if-match must be a version number/],
    [['mapping', 'put', 'acc_1'], /takes <accountId> <file.json>/],
    [['mapping', 'versions', 'acc_1', '--mapping', 'd.json'], /--mapping does not apply/],
    [['credentials', 'put', 'acc_1', 'main'], /needs --type hubspot\|salesforce\|webhook/],
    [['credentials', 'put', 'acc_1', 'main', '--type', 'pipedrive'], /needs --type/],
    [['credentials', 'list', 'acc_1', '--stdin'], /--stdin does not apply/],
    [['mapping', 'remove', 'acc_1'], /unknown command "mapping remove"/],
    [['mapping', 'delete', 'acc_1', '--if-match', 'x'], /--if-match must be a version number/],
    [['credentials', 'delete', 'acc_1'], /name/],
    // No flag takes a secret: there is nothing to put in argv.
    [['credentials', 'put', 'acc_1', 'main', '--type', 'hubspot', '--token', 'pat-x'], /token/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseInvocation(argv)).toThrow(UsageError);
    expect(() => parseInvocation(argv)).toThrow(message);
  });
});

describe('admin CLI: CRM requests and bodies', () => {
  it('maps commands to admin API requests, escaping ids and sending If-Match as an entity tag', () => {
    expect(crmRequestFor({ kind: 'mapping put', accountId: 'a/b', file: 'f', ifMatch: 4 })).toEqual({
      method: 'PUT',
      path: '/admin/v1/accounts/a%2Fb/crm/mapping',
      headers: { 'if-match': '"4"' },
      hasBody: true,
    });
    expect(crmRequestFor({ kind: 'mapping put', accountId: 'acc_1', file: 'f', skipCheck: true }).path).toBe('/admin/v1/accounts/acc_1/crm/mapping?check=skip');
    expect(crmRequestFor({ kind: 'mapping get', accountId: 'acc_1', version: 2 }).path).toBe('/admin/v1/accounts/acc_1/crm/mapping/versions/2');
    expect(crmRequestFor({ kind: 'mapping get', accountId: 'acc_1' }).path).toBe('/admin/v1/accounts/acc_1/crm/mapping');
    expect(crmRequestFor({ kind: 'mapping dry-run', accountId: 'acc_1', eventFile: 'e' })).toMatchObject({
      method: 'POST',
      path: '/admin/v1/accounts/acc_1/crm/mapping/dry-run',
    });
    expect(crmRequestFor({ kind: 'credentials put', accountId: 'acc_1', name: 'm', type: 'hubspot', fromStdin: false })).toMatchObject({
      method: 'PUT',
      path: '/admin/v1/accounts/acc_1/crm/credentials/m',
    });
  });

  it('reads credential fields from the environment, only those of the type', () => {
    const env = { CRM_ACCESS_TOKEN: 'tok', CRM_INSTANCE_URL: 'https://x.my.salesforce.com', CRM_WEBHOOK_SECRET: 'whsec', CRM_BASE_URL: '' };
    expect(credentialFromEnv('hubspot', env)).toEqual({ accessToken: 'tok' });
    expect(credentialFromEnv('salesforce', env)).toEqual({ accessToken: 'tok', instanceUrl: 'https://x.my.salesforce.com' });
    expect(credentialFromEnv('webhook', env)).toEqual({ secret: 'whsec' });
  });

  it('builds bodies from files and stdin; the --type wins over a type on stdin', async () => {
    const files: Record<string, string> = { 'e.json': '{"eventName":"x","email":"a@b.co"}', 'd.json': '{"version":1}', 'bad.json': '{' };
    const io = {
      env: {},
      readFile: async (path: string) => {
        const text = files[path];
        if (text === undefined) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
        return text;
      },
      readStdin: async () => '{"url":"https://example.com/h","secret":"whsec","type":"hubspot"}',
    };
    expect(await loadBody({ kind: 'mapping dry-run', accountId: 'a', eventFile: 'e.json', mappingFile: 'd.json' }, io)).toEqual({
      event: { eventName: 'x', email: 'a@b.co' },
      mapping: { version: 1 },
    });
    expect(await loadBody({ kind: 'credentials put', accountId: 'a', name: 'h', type: 'webhook', fromStdin: true }, io)).toEqual({
      type: 'webhook',
      url: 'https://example.com/h',
      secret: 'whsec',
    });
    await expect(loadBody({ kind: 'mapping put', accountId: 'a', file: 'missing.json' }, io)).rejects.toThrow('cannot read missing.json: ENOENT');
    await expect(loadBody({ kind: 'mapping put', accountId: 'a', file: 'bad.json' }, io)).rejects.toThrow('bad.json is not JSON');
    await expect(
      loadBody({ kind: 'credentials put', accountId: 'a', name: 'h', type: 'webhook', fromStdin: true }, { ...io, readStdin: async () => 'secret!' }),
    ).rejects.toThrow(/^stdin is not a JSON object$/);
  });
});

describe('admin CLI: CRM output', () => {
  it('prints versions, dry-runs and credentials', () => {
    expect(formatCrmSuccess({ kind: 'mapping versions', accountId: 'a' }, { versions: [{ version: 2, author: 'admin', createdAt: 'T2' }] }, table)).toBe(
      'VERSION  AUTHOR  CREATED\n2        admin   T2\n',
    );
    expect(
      formatCrmSuccess(
        { kind: 'mapping get', accountId: 'acc_1' },
        { accountId: 'acc_1', version: 3, author: 'admin', createdAt: 'T3', mapping: { version: 1 } },
        table,
      ),
    ).toBe('mapping version 3 of account acc_1 (admin, T3)\n{\n  "version": 1\n}\n');
    const dry = formatCrmSuccess(
      { kind: 'mapping dry-run', accountId: 'a', eventFile: 'e' },
      {
        mappingVersion: null,
        operations: [{ ruleId: 'r1' }],
        rules: [
          { ruleId: 'r1', matched: true },
          { ruleId: 'r2', matched: false, reason: 'condition' },
        ],
      },
      table,
    );
    expect(dry).toContain('mapping: draft\nrules:\n  matched  r1\n  skipped  r2 (condition)\noperations (1):');
    const withCalls = formatCrmSuccess(
      { kind: 'mapping dry-run', accountId: 'a', eventFile: 'e' },
      {
        mappingVersion: 2,
        operations: [],
        rules: [],
        crm: { type: 'salesforce', credentialsRef: 'sf', credential: 'stored' },
        calls: [
          { method: 'GET', path: '/services/data/v60.0/query?q=SELECT' },
          { method: 'PATCH', path: '/services/data/v60.0/composite/sobjects/Contact/Ingest_Email__c', body: { allOrNone: false } },
        ],
        notes: [{ code: 'crm_values_assumed_empty', message: 'the sink first reads Logins__c' }],
      },
      table,
    );
    expect(withCalls).toContain(
      [
        'calls to salesforce (credential sf: stored) (2):',
        '  GET /services/data/v60.0/query?q=SELECT',
        '  PATCH /services/data/v60.0/composite/sobjects/Contact/Ingest_Email__c',
        '    {"allOrNone":false}',
        'notes:',
        '  crm_values_assumed_empty: the sink first reads Logins__c',
        '',
      ].join('\n'),
    );
    const creds = formatCrmSuccess(
      { kind: 'credentials list', accountId: 'a' },
      { credentials: [{ name: 'hooks', type: 'webhook', url: 'https://example.com/h', updatedAt: 'T' }] },
      table,
    );
    expect(creds).toBe('NAME   TYPE     ENDPOINT               UPDATED\nhooks  webhook  https://example.com/h  T\n');
  });
});

describe('runCli with CRM commands', () => {
  it('sends the secret from the environment in the body, never in the URL', async () => {
    const calls: { url: string; init: RequestInit }[] = [];
    let stdout = '';
    const io: CliIo = {
      env: { ADMIN_TOKEN: 'tok', CRM_ACCESS_TOKEN: 'pat-SECRET' },
      fetch: (async (url: string, init: RequestInit) => {
        calls.push({ url, init });
        return new Response(JSON.stringify({ name: 'main', type: 'hubspot', updatedAt: 'T' }), { status: 200 });
      }) as typeof fetch,
      stdout: (t) => {
        stdout += t;
      },
      stderr: () => undefined,
    };
    expect(await runCli(['credentials', 'put', 'acc_1', 'main', '--type', 'hubspot'], io)).toBe(0);
    expect(calls[0]?.url).toBe('http://127.0.0.1:3200/admin/v1/accounts/acc_1/crm/credentials/main');
    expect(JSON.parse(String(calls[0]?.init.body))).toEqual({ type: 'hubspot', accessToken: 'pat-SECRET' });
    expect(stdout).toBe('stored hubspot credential main for account acc_1 (the secret is not shown)\n');
    expect(stdout).not.toContain('pat-SECRET');
  });

  it('exits 2 on an unreadable file without calling the API', async () => {
    let stderr = '';
    let called = false;
    const io: CliIo = {
      env: { ADMIN_TOKEN: 'tok' },
      fetch: (async () => {
        called = true;
        return new Response('{}');
      }) as typeof fetch,
      stdout: () => undefined,
      stderr: (t) => {
        stderr += t;
      },
      readFile: async () => {
        throw Object.assign(new Error('x'), { code: 'ENOENT' });
      },
    };
    expect(await runCli(['mapping', 'put', 'acc_1', 'nope.json'], io)).toBe(2);
    expect(stderr).toBe('error: cannot read nope.json: ENOENT\n');
    expect(called).toBe(false);
  });
});
