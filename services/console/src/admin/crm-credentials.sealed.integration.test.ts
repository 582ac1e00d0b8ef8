/**
 * Real servers: Kafka (the control plane's compacted topics) and Redis. CRM credentials put
 * through the admin API reach `control.crm-credentials` sealed for crm-sink's public key: the
 * raw bytes of the topic hold no secret, and nothing the gateway is given can open them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ConsumedMessage } from '@ingest/platform';
import { readTopicToEnd, REPO_ROOT } from '@ingest/platform';
import { createCredentialKeyring, createCredentialOpener, credentialSealerFromConfig } from '@ingest/domain';
import { newTestCredentialKeys, testCredentialKeys, testLogger } from '@ingest/testkit';
import { type AdminTestStack, startAdminTestStack } from '@ingest/testkit/gateway';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConsoleConfig } from '../config.js';

const TOKEN = 'admin-token-for-sealed-credentials-test';
const SECRETS = ['pat-na1-SEALED-hubspot-4711', 'sf-SEALED-access-0815', 'whsec_U0VBTEVELXdlYmhvb2s=', 'whsec_UFJFVklPVVMtc2VhbGVk'];
let stack: AdminTestStack;
let app: FastifyInstance;
let accountId: string;

beforeAll(async () => {
  stack = await startAdminTestStack();
  app = await stack.app(TOKEN);
  accountId = (await stack.controlPlane.createAccount({ name: 'Sealed Ltd', plan: 'pro' })).id;
  const put = (name: string, payload: object) =>
    app.inject({ method: 'PUT', url: `/admin/v1/accounts/${accountId}/crm/credentials/${name}`, headers: { authorization: `Bearer ${TOKEN}` }, payload });
  const answers = await Promise.all([
    put('hub', { type: 'hubspot', accessToken: SECRETS[0] }),
    put('sf', { type: 'salesforce', accessToken: SECRETS[1], instanceUrl: 'https://acme.my.salesforce.com' }),
    put('hooks', { type: 'webhook', url: 'https://hooks.example.com/in', secret: SECRETS[2], previousSecret: SECRETS[3] }),
  ]);
  expect(answers.map((a) => a.statusCode)).toEqual([200, 200, 200]);
});

afterAll(async () => {
  await stack?.close();
});

async function rawRecords(): Promise<ConsumedMessage[]> {
  const messages: ConsumedMessage[] = [];
  await readTopicToEnd(stack.kafka.kafka, { topic: stack.kafka.topic('controlCrmCredentials'), onMessage: (m) => messages.push(m), logger: testLogger() });
  return messages;
}

/** The secret's bytes in every encoding a careless writer might have used. */
function encodings(secret: string): string[] {
  return [secret, Buffer.from(secret).toString('base64'), Buffer.from(secret).toString('hex'), encodeURIComponent(secret)];
}

describe('CRM credentials at rest', () => {
  it('the raw bytes of control.crm-credentials hold no secret, only ciphertext with its key id and the settings', async () => {
    const messages = await rawRecords();
    expect(messages.map((m) => m.key?.toString()).sort()).toEqual([`${accountId}/hooks`, `${accountId}/hub`, `${accountId}/sf`]);
    const bytes = Buffer.concat(messages.flatMap((m) => [m.key ?? Buffer.alloc(0), m.value ?? Buffer.alloc(0)])).toString('latin1');
    for (const secret of SECRETS) for (const form of encodings(secret)) expect(bytes, `the topic holds ${form}`).not.toContain(form);
    for (const m of messages) {
      const record = JSON.parse(m.value?.toString() ?? 'null') as { credential: Record<string, unknown>; sealed: { kid: string; alg: string } };
      expect(record.sealed).toMatchObject({ alg: 'RSA-OAEP-256+A256GCM', kid: testCredentialKeys().kid });
      expect(Object.keys(record.credential)).not.toContain('accessToken');
      expect(Object.keys(record.credential)).not.toContain('secret');
    }
    expect(JSON.parse(messages.find((m) => m.key?.toString().endsWith('/hooks'))?.value?.toString() ?? '{}')).toMatchObject({
      credential: { type: 'webhook', url: 'https://hooks.example.com/in', signsWithPreviousSecret: true },
    });
  });

  it("the console cannot decrypt: its configuration takes a public key only, which opens nothing; crm-sink's private key does", async () => {
    const keys = testCredentialKeys();
    // Handed every key variable, the console's configuration keeps only the public key's.
    const config = loadConsoleConfig({ ...keys.consoleEnv, ...keys.sinkEnv, CRM_CREDENTIALS_PRIVATE_KEY_FILES: '/etc/crm/private.pem' });
    expect(
      Object.keys(config)
        .filter((k) => k.startsWith('CRM_CREDENTIALS_'))
        .sort(),
    ).toEqual(['CRM_CREDENTIALS_PUBLIC_KEY', 'CRM_CREDENTIALS_PUBLIC_KEY_FILE']);
    expect(credentialSealerFromConfig(config)?.kid).toBe(keys.kid);
    // The public key is no private key.
    expect(() => createCredentialKeyring([config.CRM_CREDENTIALS_PUBLIC_KEY])).toThrow(expect.objectContaining({ code: 'crm_credential_key_invalid' }));
    // The gateway's own state holds the sealed secret only; another key pair cannot open it.
    const stored = stack.controlPlane.crmCredential(accountId, 'hub');
    const sealed = stored?.sealed;
    if (!stored || !sealed) throw new Error('the gateway does not hold credential hub sealed');
    expect(stored.plaintextSecrets).toBeUndefined();
    expect(JSON.stringify(stack.controlPlane.listCrmCredentials(accountId))).not.toContain(SECRETS[0]);
    const stranger = newTestCredentialKeys();
    expect(() => createCredentialOpener({ keyring: stranger.keyring, allowPlaintext: true })({ ...stored, sealed: { ...sealed, kid: stranger.kid } })).toThrow(
      expect.objectContaining({ code: 'crm_credential_unreadable' }),
    );
    // crm-sink's private key opens it: the secret is there, encrypted.
    expect(keys.opener(stored)).toEqual({ type: 'hubspot', accessToken: SECRETS[0] });
  });

  it('no console, gateway or @ingest/http source file can open a credential (no keyring, opener or private-key setting)', () => {
    const offenders: string[] = [];
    const walk = (dir: string) => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) walk(path);
        else if (/\.tsx?$/.test(entry.name) && !/\.test\.tsx?$/.test(entry.name)) {
          const text = readFileSync(path, 'utf8');
          if (/createCredentialKeyring|createCredentialOpener|credentialKeyringFromConfig|CrmCredentialsPrivateKeysConfig|privateDecrypt/.test(text))
            offenders.push(path);
        }
      }
    };
    // The console's sources, and what it shares with the gateway and the gateway itself.
    for (const dir of [join(import.meta.dirname, '..'), join(REPO_ROOT, 'packages/http/src'), join(REPO_ROOT, 'services/gateway/src')]) walk(dir);
    expect(offenders).toEqual([]);
  });

  it("the dry-run works without the secret: it builds calls from the sealed credential's settings", async () => {
    const mapping = {
      version: 1,
      crm: { type: 'hubspot', credentialsRef: 'hub' },
      rules: [{ id: 'r', when: { eventName: 'Signed Up' }, object: 'contact', actions: [{ op: 'set', field: 'plan', from: { constant: 'pro' } }] }],
    };
    const res = await app.inject({
      method: 'POST',
      url: `/admin/v1/accounts/${accountId}/crm/mapping/dry-run`,
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: { event: { eventName: 'Signed Up', email: 'ada@example.com' }, mapping },
    });
    expect(res.statusCode, res.payload).toBe(200);
    expect(res.json()).toMatchObject({ crm: { credential: 'stored' } });
    expect(res.json().calls.length).toBeGreaterThan(0);
    for (const secret of SECRETS) expect(res.payload).not.toContain(secret);
  });
});
