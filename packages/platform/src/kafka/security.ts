import { readFileSync } from 'node:fs';
import { type TProperties, Type } from '@sinclair/typebox';
import { AppError, errorMessage } from '../errors.js';

/**
 * TLS and SASL of every Kafka connection (docs/security.md, "Kafka"). The settings are read in
 * each service's config (this fragment is part of `KafkaConfig`) and resolved here once at
 * start: files are read, combinations checked, and every refusal names the variable to fix.
 * The resolved options hold secrets: they are handed to the driver and never logged.
 */
export const SASL_MECHANISMS = ['PLAIN', 'SCRAM-SHA-256', 'SCRAM-SHA-512', 'OAUTHBEARER'] as const;
export type SaslMechanism = (typeof SASL_MECHANISMS)[number];
/** The mechanisms of a user name and a password. */
export type SaslPasswordMechanism = Exclude<SaslMechanism, 'OAUTHBEARER'>;

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
  /**
   * OAUTHBEARER: a file holding the token (a JWT), read again at every authentication so that
   * whatever renews it (a Kubernetes projected token, an identity provider's sidecar) can
   * replace it. The principal is the token's subject.
   */
  KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: Type.String({ default: '' }),
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
  KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: string;
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

export interface KafkaSaslPassword {
  mechanism: SaslPasswordMechanism;
  username: string;
  password: string;
  /** KAFKA_SASL_PASSWORD or KAFKA_SASL_PASSWORD_FILE: named in an authentication failure. */
  passwordSetting: 'KAFKA_SASL_PASSWORD' | 'KAFKA_SASL_PASSWORD_FILE';
}

export interface KafkaSaslOAuthBearer {
  mechanism: 'OAUTHBEARER';
  /** The token now: the file read again (it may have been renewed). */
  token: () => string;
  /** The token's subject (its `sub` claim) as read at start, for logs and errors; Kafka's principal. */
  subject: string;
  tokenSetting: 'KAFKA_SASL_OAUTHBEARER_TOKEN_FILE';
}

export type KafkaSasl = KafkaSaslPassword | KafkaSaslOAuthBearer;

/** Who authenticates, for logs and errors: `user ingest` or `token subject ingest`. */
export function saslPrincipal(sasl: KafkaSasl): string {
  return sasl.mechanism === 'OAUTHBEARER' ? `token subject ${sasl.subject}` : `user ${sasl.username}`;
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
  const passwordGiven = (['KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD', 'KAFKA_SASL_PASSWORD_FILE'] as const).filter((k) => settings[k]);
  const saslGiven = [...passwordGiven, ...(settings.KAFKA_SASL_OAUTHBEARER_TOKEN_FILE ? ['KAFKA_SASL_OAUTHBEARER_TOKEN_FILE'] : [])];
  if (!mechanism) {
    if (saslGiven.length > 0) throw invalid(saslGiven[0] as string, `is set but KAFKA_SASL_MECHANISM is empty (one of ${SASL_MECHANISMS.join(', ')})`);
    return security;
  }
  if (mechanism === 'OAUTHBEARER') {
    if (passwordGiven.length > 0)
      throw invalid(passwordGiven[0] as string, 'is set but OAUTHBEARER takes a token (KAFKA_SASL_OAUTHBEARER_TOKEN_FILE), not a user name and password');
    // A bearer token is as good as a password to whoever sees it.
    if (!security.tls) throw invalid('KAFKA_SASL_MECHANISM', 'OAUTHBEARER sends the token in clear: it needs KAFKA_SSL=true');
    security.sasl = oauthBearer(settings.KAFKA_SASL_OAUTHBEARER_TOKEN_FILE ?? '', read);
    return security;
  }
  if (settings.KAFKA_SASL_OAUTHBEARER_TOKEN_FILE)
    throw invalid('KAFKA_SASL_OAUTHBEARER_TOKEN_FILE', `is set but KAFKA_SASL_MECHANISM is ${mechanism}, not OAUTHBEARER`);
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

const SETTING_TOKEN = 'KAFKA_SASL_OAUTHBEARER_TOKEN_FILE';

/**
 * The token file, checked at start (readable, a JWT with a subject) and read again at every
 * authentication. The token is not verified here: that is the broker's job, with its issuer's keys.
 */
function oauthBearer(file: string, read: (path: string) => string): KafkaSaslOAuthBearer {
  if (!file) throw invalid(SETTING_TOKEN, 'is required with KAFKA_SASL_MECHANISM=OAUTHBEARER');
  const token = () => {
    try {
      return read(file).trim();
    } catch (err) {
      throw invalid(SETTING_TOKEN, `cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? errorMessage(err)})`, err);
    }
  };
  const subject = jwtSubject(token());
  if (subject === undefined) throw invalid(SETTING_TOKEN, `${file} does not hold a JWT with a subject (sub claim)`);
  return { mechanism: 'OAUTHBEARER', token, subject, tokenSetting: SETTING_TOKEN };
}

/** The `sub` claim of a compact JWT, unverified; undefined when it is not one. */
function jwtSubject(jwt: string): string | undefined {
  const parts = jwt.split('.');
  if (parts.length !== 3 || !parts[1]) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof claims.sub === 'string' && claims.sub !== '' ? claims.sub : undefined;
  } catch {
    return undefined;
  }
}

/** For logs: what is on, never a secret. */
export function describeKafkaSecurity(security: KafkaSecurity | undefined): string {
  const protocol = `${security?.sasl ? 'SASL_' : ''}${security?.tls ? 'SSL' : 'PLAINTEXT'}`;
  return security?.sasl ? `${protocol} (${security.sasl.mechanism}, ${saslPrincipal(security.sasl)})` : protocol;
}
