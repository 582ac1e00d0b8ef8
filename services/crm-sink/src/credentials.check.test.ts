/**
 * The start-up check counts records sealed under AAD v1 (URLs not bound) and exports the live
 * count, so an operator sees what `credentials-key rotate` has left to re-seal. No servers.
 */
import { createLogger, createMetricsRegistry } from '@ingest/platform';
import { credentialAad, sealCredentialSecrets, type StoredCrmCredential } from '@ingest/domain';
import { sampleValue, testCredentialKeys } from '@ingest/testkit';
import { describe, expect, it } from 'vitest';
import { createCredentialsCheck } from './credentials.check.js';

function record(name: string, aadVersion: 1 | 2): StoredCrmCredential {
  const base = { accountId: 'acc_check', name, credential: { type: 'hubspot' as const, baseUrl: 'https://api.hubapi.com' }, updatedAt: 'x' };
  const { sealer } = testCredentialKeys();
  const sealed =
    aadVersion === 1
      ? sealer.seal({ accessToken: 't' }, credentialAad(base.accountId, name, 'hubspot'))
      : sealCredentialSecrets(sealer, base, { accessToken: 't' });
  return { ...base, sealed };
}

describe('crm-sink credentials check: AAD v1 records', () => {
  it('exports how many records are still sealed under AAD v1, live as they are re-sealed', async () => {
    const all = [record('a', 1), record('b', 1), record('c', 2)];
    const metrics = createMetricsRegistry('crm-sink');
    const check = createCredentialsCheck({
      credentials: { allCrmCredentials: () => all },
      keyring: testCredentialKeys().keyring,
      allowPlaintext: false,
      logger: createLogger({ service: 'crm-sink', level: 'silent' }),
      metrics,
    });
    await check.start();
    expect(sampleValue(await metrics.metrics(), 'ingest_crm_credentials_aad_v1')).toBe(2);
    all.splice(0, 2, record('a', 2), record('b', 2));
    expect(sampleValue(await metrics.metrics(), 'ingest_crm_credentials_aad_v1')).toBe(0);
  });
});
