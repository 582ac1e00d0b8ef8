import { readFileSync } from 'node:fs';
import { type TProperties, Type } from '@sinclair/typebox';
import { AppError, errorMessage } from '../errors.js';

/**
 * TLS and SASL of every Kafka connection (docs/security.md, "Kafka"). The settings are read in
 * each service's config (this fragment is part of `KafkaConfig`) and resolved here once at
 * start: files are read, combinations checked, and every refusal names the variable to fix.
 * The resolved options hold secrets: they are handed to the driver and never logged.
 */
export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512'] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];

export const KafkaSecurityConfig = {
  /** TLS to the brokers (the SSL / SASL_SSL security protocols). */
  KAFKA_SSL: Type.Boolean({ default: false }),
  /** CAs to trust, as a file path or PEM text; empty: the system's CAs (enough for most managed Kafka). */
  KAFKA_SSL_CA: Type.String({ default: '' }),
  /** Client certificate (mutual TLS), as a file path or PEM text; needs KAFKA_SSL_KEY. */
  KAFKA_SSL_CERT: Type.String({ default: '' }),
  /** Private key of KAFKA_SSL_CERT, as a file path or PEM text. */
  KAFKA_SSL_KEY: Type.String({ default: '' }),
  /** Passphrase of an encrypted KAFKA_SSL_KEY. */
  KAFKA_SSL_KEY_PASSWORD: Type.String({ default: '' }),
  /** Name the brokers' certificates are checked against (and sent as SNI) instead of the host of each broker address. */
  KAFKA_SSL_SERVERNAME: Type.String({ default: '' }),
  /** Empty: no SASL. */
  KAFKA_SASL_MECHANISM: Type.Union([Type.Literal(''), ...SASL_MECHANISMS.map((m) => Type.Literal(m))], { default: '' }),
  KAFKA_SASL_USERNAME: Type.String({ default: '' }),
  KAFKA_SASL_PASSWORD: Type.String({ default: '' }),
  /** A file holding the password (a mounted Secret); instead of KAFKA_SASL_PASSWORD. */
  KAFKA_SASL_PASSWORD_FILE: Type.String({ default: '' }),
} satisfies TProperties;

/** The settings of `KafkaSecurityConfig`; all optional so tools and tests may pass only some. */
export type KafkaSecuritySettings = Partial<{
  KAFKA_SSL: boolean;
  KAFKA_SSL_CA: string;
  KAFKA_SSL_CERT: string;
  KAFKA_SSL_KEY: string;
  KAFKA_SSL_KEY_PASSWORD: string;
  KAFKA_SSL_SERVERNAME: string;
  KAFKA_SASL_MECHANISM: SaslMechanism | '';
  KAFKA_SASL_USERNAME: string;
  KAFKA_SASL_PASSWORD: string;
  KAFKA_SASL_PASSWORD_FILE: string;
}>;

export interface KafkaTls {
  /** PEM text; undefined: Node's default CAs. */
  ca?: string;
  cert?: string;
  key?: string;
  passphrase?: string;
  servername?: string;
  /** Which settings were given, for error messages. */
  caSetting: 'KAFKA_SSL_CA' | 'the system CAs';
}

export interface KafkaSasl {
  mechanism: SaslMechanism;
  username: string;
  password: string;
  /** KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE: named in an authentication failure. */
  passwordSetting: 'KAFKA_SASL_PASSWORD' | 'KAFKA_SASL_PASSWORD_FILE';
}

/** What a driver needs to connect securely; absent parts are off. */
export interface KafkaSecurity {
  tls?: KafkaTls;
  sasl?: KafkaSasl;
}

function invalid(setting: string, message: string, cause?: unknown): AppError {
  return new AppError('invalid_config', `invalid configuration: ${setting}: ${message}`, { cause });
}

/**
 * A value that is either PEM text or a path to a PEM file. `kind` is what the PEM must hold
 * (CERTIFICATE, PRIVATE KEY, ...): a wrong file is refused here, not by the first TLS handshake.
 */
function pemValue(setting: string, value: string, kind: RegExp, read: (path: string) => string): string {
  let text = value;
  if (!value.includes('-----BEGIN')) {
    try {
      text = read(value);
    } catch (err) {
      throw invalid(setting, `cannot read ${value} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}); give a PEM file path or PEM text`, err);
    }
  }
  if (!kind.test(text)) throw invalid(setting, `${value.includes('-----BEGIN') ? 'the PEM text' : value} holds no ${kind.source.replace(/\\/g, '')} block`);
  return text;
}

const CERTIFICATE = /-----BEGIN CERTIFICATE-----/;
const PRIVATE_KEY = /-----BEGIN (?:RSA |EC |ENCRYPTED )?PRIVATE KEY-----/;

/** Turns the settings into connection options; throws `invalid_config` naming the variable. */
export function resolveKafkaSecurity(settings: KafkaSecuritySettings, read: (path: string) => string = (p) => readFileSync(p, 'utf8')): KafkaSecurity {
  const security: KafkaSecurity = {};
  const tlsGiven = (['KAFKA_SSL_CA', 'KAFKA_SSL_CERT', 'KAFKA_SSL_KEY', 'KAFKA_SSL_KEY_PASSWORD', 'KAFKA_SSL_SERVERNAME'] as const).filter((k) => settings[k]);
  if (settings.KAFKA_SSL) {
    if (Boolean(settings.KAFKA_SSL_CERT) !== Boolean(settings.KAFKA_SSL_KEY)) {
      throw invalid(settings.KAFKA_SSL_CERT ? 'KAFKA_SSL_KEY' : 'KAFKA_SSL_CERT', 'a client certificate needs both KAFKA_SSL_CERT and KAFKA_SSL_KEY');
    }
    security.tls = {
      caSetting: settings.KAFKA_SSL_CA ? 'KAFKA_SSL_CA' : 'the system CAs',
      ...(settings.KAFKA_SSL_CA ? { ca: pemValue('KAFKA_SSL_CA', settings.KAFKA_SSL_CA, CERTIFICATE, read) } : {}),
      ...(settings.KAFKA_SSL_CERT ? { cert: pemValue('KAFKA_SSL_CERT', settings.KAFKA_SSL_CERT, CERTIFICATE, read) } : {}),
      ...(settings.KAFKA_SSL_KEY ? { key: pemValue('KAFKA_SSL_KEY', settings.KAFKA_SSL_KEY, PRIVATE_KEY, read) } : {}),
      ...(settings.KAFKA_SSL_KEY_PASSWORD ? { passphrase: settings.KAFKA_SSL_KEY_PASSWORD } : {}),
      ...(settings.KAFKA_SSL_SERVERNAME ? { servername: settings.KAFKA_SSL_SERVERNAME } : {}),
    };
  } else if (tlsGiven.length > 0) {
    // A CA without KAFKA_SSL would silently connect in plaintext: refuse instead.
    throw invalid(tlsGiven[0] as string, 'is set but KAFKA_SSL is not true (set KAFKA_SSL=true to connect with TLS)');
  }

  const mechanism = settings.KAFKA_SASL_MECHANISM || undefined;
  const saslGiven = (['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD', 'KAFKA_SASL_PASSWORD_FILE'] as const).filter((k) => settings[k]);
  if (!mechanism) {
    if (saslGiven.length > 0) throw invalid(saslGiven[0] as string, `is set but KAFKA_SASL_MECHANISM is empty (one of ${SASL_MECHANISMS.join(', ')})`);
    return security;
  }
  if (!settings.KAFKA_SASL_USERNAME) throw invalid('KAFKA_SASL_USERNAME', `is required with KAFKA_SASL_MECHANISM=${mechanism}`);
  if (settings.KAFKA_SASL_PASSWORD && settings.KAFKA_SASL_PASSWORD_FILE) {
    throw invalid('KAFKA_SASL_PASSWORD_FILE', 'give either KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE, not both');
  }
  let password = settings.KAFKA_SASL_PASSWORD ?? '';
  const passwordSetting = settings.KAFKA_SASL_PASSWORD_FILE ? 'KAFKA_SASL_PASSWORD_FILE' : 'KAFKA_SASL_PASSWORD';
  if (settings.KAFKA_SASL_PASSWORD_FILE) {
    try {
      // A trailing newline is how most tools write a secret file; it is never part of the password.
      password = read(settings.KAFKA_SASL_PASSWORD_FILE).replace(/\r?\n$/, '');
    } catch (err) {
      throw invalid(
        'KAFKA_SASL_PASSWORD_FILE',
        `cannot read ${settings.KAFKA_SASL_PASSWORD_FILE} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)})`,
        err,
      );
    }
  }
  if (!password) throw invalid(passwordSetting, `is required (and not empty) with KAFKA_SASL_MECHANISM=${mechanism}`);
  // PLAIN sends the password itself; SCRAM proves it without sending it.
  if (mechanism === 'PLAIN' && !security.tls) throw invalid('KAFKA_SASL_MECHANISM', 'PLAIN sends the password in clear: it needs KAFKA_SSL=true');
  security.sasl = { mechanism, username: settings.KAFKA_SASL_USERNAME, password, passwordSetting };
  return security;
}

/** For logs: what is on, never a secret. */
export function describeKafkaSecurity(security: KafkaSecurity | undefined): string {
  const protocol = `${security?.sasl ? 'SASL_' : ''}${security?.tls ? 'SSL' : 'PLAINTEXT'}`;
  return security?.sasl ? `${protocol} (${security.sasl.mechanism}, user ${security.sasl.username})` : protocol;
}
