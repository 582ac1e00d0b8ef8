/**
 * Real servers: Kafka and Redis; the fake HubSpot over HTTP with the real adapter; the key
 * command as a real process. Credentials sealed for key A sync; `credentials-key rotate`
 * re-wraps them for key B (and encrypts a record stored in clear before encryption, which
 * stopped the sink's start, and seals a record sealed under AAD v1 again under v2); a sink
 * holding only key B then syncs with the same tokens.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CrmMapping } from '@ingest/schemas';
import { REPO_ROOT } from '@ingest/platform';
import { type ControlPlane, credentialAad, createCredentialOpener } from '@ingest/domain';
import { integrationEnv, newTestCredentialKeys, testCredentialKeys, testLogger, uniqueSuffix, waitFor } from '@ingest/testkit';
import { FAKE_CRM_OUTBOUND, type FakeCrm, startFakeCrm } from '@ingest/testkit/fake-crm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAdapter } from './adapters/index.js';
import { createCredentialsCheck } from './credentials.check.js';
import { createSinkFixture, type SinkFixture } from './crm-sink.fixture.js';

const run = promisify(execFile);
const TOKENS = ['tok-sealed-a', 'tok-legacy-plain', 'tok-aad-v1'];
let fx: SinkFixture;
let crm: FakeCrm;
let controlPlane: ControlPlane;

const mapping: CrmMapping = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hub' },
  rules: [{ id: 'seen', when: { eventName: 'Seen' }, object: 'contact', actions: [{ op: 'increment', field: 'visits', by: 1 }] }],
};

beforeAll(async () => {
  crm = await startFakeCrm({ tokens: TOKENS });
  fx = await createSinkFixture({
    createAdapter: (credential) => createAdapter(credential, { outboundPolicy: FAKE_CRM_OUTBOUND }),
    controlPlane: true,
  });
  controlPlane = fx.controlPlane();
});

afterAll(async () => {
  await fx?.cleanup();
  await crm?.stop();
});

async function visits(email: string, expected: string): Promise<void> {
  await waitFor(() => crm.records('hubspot', 'contacts').get(email)?.properties.visits === expected, {
    description: `${email} has visits=${expected} (now ${JSON.stringify(crm.records('hubspot', 'contacts').get(email)?.properties)})`,
  });
}

describe('rotating the CRM credentials key', () => {
  it('re-wraps every credential for a new key and encrypts plaintext ones; syncs go on with the new key alone', async () => {
    const keyA = testCredentialKeys();
    const keyB = newTestCredentialKeys();
    const sealedAccount = (await controlPlane.createAccount({ name: 'Sealed', plan: 'pro' })).id;
    const legacyAccount = (await controlPlane.createAccount({ name: 'Legacy', plan: 'pro' })).id;
    const v1Account = (await controlPlane.createAccount({ name: 'AAD v1', plan: 'pro' })).id;
    await controlPlane.putCrmCredential(sealedAccount, 'hub', { type: 'hubspot', accessToken: TOKENS[0] as string, baseUrl: crm.url });
    // A record as the release before encryption wrote it: the token in clear.
    const legacy = {
      accountId: legacyAccount,
      name: 'hub',
      credential: { type: 'hubspot', accessToken: TOKENS[1], baseUrl: crm.url },
      updatedAt: new Date().toISOString(),
    };
    // A record as the release before AAD v2 sealed it: only account, name and type bound.
    const v1 = {
      accountId: v1Account,
      name: 'hub',
      credential: { type: 'hubspot', baseUrl: crm.url },
      updatedAt: new Date().toISOString(),
      sealed: keyA.sealer.seal({ accessToken: TOKENS[2] as string }, credentialAad(v1Account, 'hub', 'hubspot')),
    };
    await fx.producer.send(fx.kafka.topic('controlCrmCredentials'), [
      { key: `${legacyAccount}/hub`, value: JSON.stringify(legacy) },
      { key: `${v1Account}/hub`, value: JSON.stringify(v1) },
    ]);
    await controlPlane.putMapping(sealedAccount, mapping, 'cli');
    await controlPlane.putMapping(legacyAccount, mapping, 'cli');
    await controlPlane.putMapping(v1Account, mapping, 'cli');
    await waitFor(() => controlPlane.allCrmCredentials().length === 3, { description: 'the three credentials in the control plane' });

    // A sink refuses to start while a credential is in clear, naming the way out.
    const check = (keyring = keyA.keyring, allowPlaintext = false) =>
      createCredentialsCheck({ credentials: controlPlane, keyring, allowPlaintext, logger: testLogger() });
    await expect(check().start()).rejects.toThrow(
      /1 CRM credential\(s\) .* stored in clear: encrypt them with `npm run credentials-key -- rotate`.*CRM_CREDENTIALS_ALLOW_PLAINTEXT/,
    );
    await check(keyA.keyring, true).start();

    const groupId = `crm-sink-${uniqueSuffix()}`;
    const sinkA = await fx.startSink(groupId, { mappings: controlPlane, openCredential: keyA.opener });
    const first = [fx.event(sealedAccount, 'Seen', 'ann@sealed.io', {}, 1), fx.event(v1Account, 'Seen', 'vic@v1.io', {}, 1)];
    await fx.produce(first);
    await fx.settled(first);
    await visits('ann@sealed.io', '1');
    // A record sealed under AAD v1 still opens.
    await visits('vic@v1.io', '1');
    await sinkA.stop();

    const dir = mkdtempSync(join(tmpdir(), 'crm-rotate-'));
    writeFileSync(join(dir, 'b.pub.pem'), keyB.publicKeyPem);
    const env = {
      PATH: process.env.PATH ?? '',
      KAFKA_BROKERS: integrationEnv().kafkaBrokers,
      KAFKA_DRIVER: integrationEnv().kafkaDriver,
      KAFKA_TOPIC_PREFIX: fx.kafka.prefix,
      CRM_CREDENTIALS_PRIVATE_KEYS: keyA.privateKeyPem,
    };
    const rotated = await run(
      process.execPath,
      ['--import', 'tsx', 'tools/cli/src/main.ts', 'credentials-key', 'rotate', '--to-public-key', join(dir, 'b.pub.pem')],
      {
        cwd: REPO_ROOT,
        env,
      },
    );
    expect(rotated.stdout).toContain(
      `sealed for key ${keyB.kid}: 1 re-wrapped, 1 encrypted (were in clear), 0 already sealed for it, 1 sealed again under AAD v2 (were v1)`,
    );
    expect(rotated.stdout).toContain(`key ${keyB.kid}: 3`);
    await waitFor(() => controlPlane.allCrmCredentials().every((c) => c.sealed?.kid === keyB.kid && c.sealed.aad === 2), {
      description: `every credential sealed for key B under AAD v2 (now ${JSON.stringify(controlPlane.allCrmCredentials().map((c) => [c.sealed?.kid, c.sealed?.aad]))})`,
    });
    // Running it again changes nothing.
    const again = await run(
      process.execPath,
      ['--import', 'tsx', 'tools/cli/src/main.ts', 'credentials-key', 'rotate', '--to-public-key', join(dir, 'b.pub.pem')],
      {
        cwd: REPO_ROOT,
        env,
      },
    );
    expect(again.stdout).toContain('0 re-wrapped, 0 encrypted (were in clear), 3 already sealed for it, 0 sealed again under AAD v2');

    // Key A alone opens nothing any more; the start-up check now passes without the plaintext setting.
    const onlyA = controlPlane.crmCredential(sealedAccount, 'hub');
    expect(() => onlyA && keyA.opener(onlyA)).toThrow(expect.objectContaining({ code: 'crm_credential_unreadable' }));
    await check(keyB.keyring).start();

    await fx.startSink(groupId, { mappings: controlPlane, openCredential: createCredentialOpener({ keyring: keyB.keyring, allowPlaintext: false }) });
    const second = [
      fx.event(sealedAccount, 'Seen', 'ann@sealed.io', {}, 2),
      fx.event(legacyAccount, 'Seen', 'leo@legacy.io', {}, 2),
      fx.event(v1Account, 'Seen', 'vic@v1.io', {}, 2),
    ];
    await fx.produce(second);
    await fx.settled(second);
    expect((await fx.states(second)).map((s) => s.state)).toEqual(['synced', 'synced', 'synced']);
    await visits('ann@sealed.io', '2');
    await visits('leo@legacy.io', '1');
    await visits('vic@v1.io', '2');
  });
});
