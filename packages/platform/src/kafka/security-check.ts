import { AppError, errorMessage } from '../errors.js';
import type { Logger } from '../logger.js';
import type { KafkaClient } from './driver.js';
import { findTlsFailure, KafkaError } from './errors.js';
import { describeKafkaSecurity, type KafkaSecurity, saslPrincipal } from './security.js';

/**
 * The start-up check of a service's Kafka settings. A wrong password or an untrusted
 * certificate would otherwise show up as consumers that crash and rejoin forever and a
 * producer that fails every request: one metadata round trip at start turns it into one error
 * that names the setting to fix, and the service exits. Kafka merely unreachable is not a
 * settings problem: it is logged and the service starts as before (its clients retry).
 */
export async function verifyKafkaAccess(kafka: KafkaClient, options: { brokers: string; security?: KafkaSecurity; logger: Logger }): Promise<void> {
  const admin = kafka.admin();
  try {
    await admin.connect();
    await admin.listTopics();
    options.logger.info({ brokers: options.brokers, security: describeKafkaSecurity(options.security) }, 'kafka connection checked');
  } catch (err) {
    const explained = explainKafkaSecurityFailure(err, options.brokers, options.security);
    if (explained) throw explained;
    // kafkajs takes a refused OAUTHBEARER token for success and then sees the connection closed.
    const hint = options.security?.sasl?.mechanism === 'OAUTHBEARER' ? '; with KAFKA_DRIVER=kafkajs a refused OAUTHBEARER token also looks like this' : '';
    options.logger.warn({ err, brokers: options.brokers }, `kafka not reachable at start; the clients keep trying${hint}`);
  } finally {
    await admin.disconnect().catch(() => {});
  }
}

/**
 * The error to stop a start with when `err` says the security settings are wrong, naming the
 * setting (docs/security.md lists these messages); undefined for any other failure.
 */
export function explainKafkaSecurityFailure(err: unknown, brokers: string, security: KafkaSecurity | undefined): AppError | undefined {
  const fail = (message: string) =>
    new AppError('kafka_auth_failed', `${message} (at ${brokers}; cause: ${errorMessage(err)})`, { retryable: false, cause: err });
  const tlsCode = findTlsFailure(err);
  if (tlsCode) {
    if (!security?.tls) return undefined;
    if (tlsCode === 'ERR_TLS_CERT_ALTNAME_INVALID' || tlsCode === 'HOSTNAME_MISMATCH') {
      return fail(`KAFKA_SSL_SERVERNAME: the broker's certificate is not for the name connected to (${tlsCode}); set KAFKA_SSL_SERVERNAME to a name it holds`);
    }
    if (tlsCode.startsWith('ERR_SSL_')) return fail(`KAFKA_SSL: the TLS handshake failed (${tlsCode}); does this listener speak TLS?`);
    return fail(
      `${security.tls.caSetting === 'KAFKA_SSL_CA' ? 'KAFKA_SSL_CA' : 'KAFKA_SSL_CA (unset, so the system CAs)'}: the broker's certificate is not trusted (${tlsCode})`,
    );
  }
  if (err instanceof KafkaError && err.code === 'kafka_auth_failed' && security?.sasl) {
    const sasl = security.sasl;
    if (sasl.mechanism === 'OAUTHBEARER') {
      return fail(
        `${sasl.tokenSetting}: the broker refused the token of subject ${sasl.subject} (OAUTHBEARER); is it expired, or signed by an issuer, for an audience the broker does not accept?`,
      );
    }
    const { passwordSetting, username, mechanism } = sasl;
    return fail(
      `${passwordSetting}: authentication failed for user ${username} (${mechanism}); check KAFKA_SASL_USERNAME, ${passwordSetting} and KAFKA_SASL_MECHANISM`,
    );
  }
  if (err instanceof KafkaError && err.code === 'kafka_not_authorized') {
    const who = security?.sasl ? saslPrincipal(security.sasl) : 'the anonymous principal';
    return new AppError('kafka_not_authorized', `Kafka refused ${who} to describe the cluster's topics: ${err.message} (its ACLs, docs/security.md)`, {
      retryable: false,
      cause: err,
    });
  }
  return undefined;
}
