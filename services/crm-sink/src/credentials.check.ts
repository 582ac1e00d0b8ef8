import { Gauge } from 'prom-client';
import { AppError, type Component, type Logger, METRIC_NAMES, type Registry } from '@ingest/platform';
import { type CredentialKeyring, type CrmCredentialLister, sealedAadVersion } from '@ingest/domain';

export interface CredentialsCheckDeps {
  credentials: Pick<CrmCredentialLister, 'allCrmCredentials'>;
  keyring: CredentialKeyring;
  allowPlaintext: boolean;
  logger: Logger;
  /** Where the live count of AAD v1 records is exported (ingest_crm_credentials_aad_v1). */
  metrics?: Registry;
}

/**
 * Runs once the control plane has read its topics, before the sink consumes: credentials stored
 * in clear (written before encryption) stop the start unless the migration setting allows them,
 * so an operator learns of them at deploy time rather than from dead letters. Sealed records
 * whose key id is not configured are logged (their events would dead-letter with
 * crm_credential_unreadable): a rotation not finished, or a key not mounted. Records sealed under
 * AAD version 1 (their URLs not bound to the secret) still open and are counted with a warning, so
 * an operator knows to re-seal them with `credentials-key rotate`.
 */
export function createCredentialsCheck(deps: CredentialsCheckDeps): Component {
  const countAadV1 = () => deps.credentials.allCrmCredentials().filter((c) => c.sealed && sealedAadVersion(c.sealed) === 1).length;
  if (deps.metrics) {
    new Gauge({
      name: METRIC_NAMES.crmCredentialsAadV1,
      help: 'CRM credentials sealed under AAD v1 (their URLs not bound to the secret): re-seal them with credentials-key rotate',
      registers: [deps.metrics],
      collect() {
        this.set(countAadV1());
      },
    });
  }
  return {
    name: 'crm-credentials-check',
    async start() {
      const all = deps.credentials.allCrmCredentials();
      const plaintext = all.filter((c) => !c.sealed).length;
      if (plaintext > 0 && !deps.allowPlaintext) {
        throw new AppError(
          'crm_credentials_plaintext',
          `${plaintext} CRM credential(s) in control.crm-credentials are stored in clear: encrypt them with \`npm run credentials-key -- rotate\` (docs/security.md), or set CRM_CREDENTIALS_ALLOW_PLAINTEXT=true until then`,
        );
      }
      const byKid = new Map<string, number>();
      for (const c of all) if (c.sealed) byKid.set(c.sealed.kid, (byKid.get(c.sealed.kid) ?? 0) + 1);
      const unknown = [...byKid].filter(([kid]) => !deps.keyring.kids.includes(kid));
      const log = deps.logger.child({ component: 'crm-credentials-check' });
      if (unknown.length > 0) {
        log.error(
          { unknownKeyIds: Object.fromEntries(unknown), configuredKeyIds: deps.keyring.kids },
          'CRM credentials sealed with keys this sink does not hold',
        );
      }
      const aadV1 = countAadV1();
      if (aadV1 > 0) {
        log.warn(
          { aadV1 },
          'CRM credentials sealed under AAD v1 (their URLs are not bound to the secret): re-seal them with `npm run credentials-key -- rotate` (docs/runbook.md)',
        );
      }
      log.info(
        { credentials: all.length, plaintext, aadV1, byKeyId: Object.fromEntries(byKid), configuredKeyIds: deps.keyring.kids },
        'crm credentials checked',
      );
    },
    async stop() {},
    healthy: () => true,
  };
}
