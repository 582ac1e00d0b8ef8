import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { KafkaConfig, loadConfig } from '../config.js';
import { kafkajsSecurity } from './drivers/kafkajs.client.js';
import { platformaticSecurity, refusedTokenCheck } from './drivers/platformatic.client.js';
import { KafkaError, toKafkaError } from './errors.js';
import { explainKafkaSecurityFailure } from './security-check.js';
import { describeKafkaSecurity, resolveKafkaSecurity } from './security.js';

const CA = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const KEY = '-----BEGIN PRIVATE KEY-----\nMIIE\n-----END PRIVATE KEY-----\n';
const jwt = (claims: object) => `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.c2ln`;
const files: Record<string, string> = {
  '/s/ca.pem': CA,
  '/s/key.pem': KEY,
  '/s/password': 's3cret\n',
  '/s/not-pem.txt': 'hello',
  '/s/token': `${jwt({ sub: 'processor' })}\n`,
  '/s/no-sub-token': jwt({ aud: 'kafka' }),
};
const read = (path: string) => {
  const text = files[path];
  if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
  return text;
};

describe('resolveKafkaSecurity', () => {
  it('is off by default (plaintext, no SASL)', () => {
    const config = loadConfig(Type.Object(KafkaConfig), {});
    expect(resolveKafkaSecurity(config, read)).toEqual({});
    expect(describeKafkaSecurity(resolveKafkaSecurity(config, read))).toBe('PLAINTEXT');
  });

  it('reads the CA from a path or takes PEM text, and the password from a file without its newline', () => {
    const config = loadConfig(Type.Object(KafkaConfig), {
      KAFKA_SSL: 'true',
      KAFKA_SSL_CA: '/s/ca.pem',
      KAFKA_SSL_SERVERNAME: 'broker.internal',
      KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512',
      KAFKA_SASL_USERNAME: 'ingest',
      KAFKA_SASL_PASSWORD_FILE: '/s/password',
    });
    const security = resolveKafkaSecurity(config, read);
    expect(security).toEqual({
      tls: { ca: CA, servername: 'broker.internal', caSetting: 'KAFKA_SSL_CA' },
      sasl: { mechanism: 'SCRAM-SHA-512', username: 'ingest', password: 's3cret', passwordSetting: 'KAFKA_SASL_PASSWORD_FILE' },
    });
    expect(resolveKafkaSecurity({ KAFKA_SSL: true, KAFKA_SSL_CA: CA, KAFKA_SSL_CERT: CA, KAFKA_SSL_KEY: '/s/key.pem' }, read).tls).toMatchObject({
      ca: CA,
      cert: CA,
      key: KEY,
    });
    // What is logged names the protocol and the user, never the password.
    expect(describeKafkaSecurity(security)).toBe('SASL_SSL (SCRAM-SHA-512, user ingest)');
  });

  it.each([
    [{ KAFKA_SSL_CA: CA }, /KAFKA_SSL_CA: is set but KAFKA_SSL is not true/],
    [{ KAFKA_SSL: true, KAFKA_SSL_CA: '/s/missing.pem' }, /KAFKA_SSL_CA: cannot read \/s\/missing.pem \(ENOENT\)/],
    [{ KAFKA_SSL: true, KAFKA_SSL_CA: '/s/not-pem.txt' }, /KAFKA_SSL_CA: \/s\/not-pem.txt holds no -----BEGIN CERTIFICATE----- block/],
    [{ KAFKA_SSL: true, KAFKA_SSL_CERT: CA }, /KAFKA_SSL_KEY: a client certificate needs both/],
    [{ KAFKA_SSL: true, KAFKA_SSL_CERT: CA, KAFKA_SSL_KEY: CA }, /KAFKA_SSL_KEY: the PEM text holds no/],
    [{ KAFKA_SASL_USERNAME: 'ingest' }, /KAFKA_SASL_USERNAME: is set but KAFKA_SASL_MECHANISM is empty/],
    [{ KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256', KAFKA_SASL_PASSWORD: 'x' }, /KAFKA_SASL_USERNAME: is required with KAFKA_SASL_MECHANISM=SCRAM-SHA-256/],
    [{ KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256', KAFKA_SASL_USERNAME: 'u' }, /KAFKA_SASL_PASSWORD: is required/],
    [
      { KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'x', KAFKA_SASL_PASSWORD_FILE: '/s/password' },
      /KAFKA_SASL_PASSWORD_FILE: give either/,
    ],
    [{ KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD_FILE: '/s/nope' }, /KAFKA_SASL_PASSWORD_FILE: cannot read/],
    [{ KAFKA_SASL_MECHANISM: 'PLAIN', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'x' }, /KAFKA_SASL_MECHANISM: PLAIN sends the password in clear/],
  ] as const)('refuses %j naming the setting', (settings, message) => {
    expect(() => resolveKafkaSecurity(settings, read)).toThrow(message);
  });

  it('takes an OAUTHBEARER token from its file, read again at every authentication, and names its subject', () => {
    const security = resolveKafkaSecurity({ KAFKA_SSL: true, KAFKA_SASL_MECHANISM: 'OAUTHBEARER', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: '/s/token' }, read);
    if (security.sasl?.mechanism !== 'OAUTHBEARER') throw new Error(`not OAUTHBEARER: ${JSON.stringify(security.sasl)}`);
    expect(security.sasl).toMatchObject({ subject: 'processor', tokenSetting: 'KAFKA_SASL_OAUTHBEARER_TOKEN_FILE' });
    expect(security.sasl.token()).toBe(jwt({ sub: 'processor' }));
    files['/s/token'] = jwt({ sub: 'processor', renewed: true });
    expect(security.sasl.token()).toBe(jwt({ sub: 'processor', renewed: true }));
    expect(describeKafkaSecurity(security)).toBe('SASL_SSL (OAUTHBEARER, token subject processor)');
  });

  it.each([
    [{ KAFKA_SASL_MECHANISM: 'OAUTHBEARER', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: '/s/token' }, /KAFKA_SASL_MECHANISM: OAUTHBEARER sends the token in clear/],
    [{ KAFKA_SSL: true, KAFKA_SASL_MECHANISM: 'OAUTHBEARER' }, /KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: is required/],
    [
      { KAFKA_SSL: true, KAFKA_SASL_MECHANISM: 'OAUTHBEARER', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: '/s/nope' },
      /KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: cannot read \/s\/nope/,
    ],
    [
      { KAFKA_SSL: true, KAFKA_SASL_MECHANISM: 'OAUTHBEARER', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: '/s/no-sub-token' },
      /KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: \/s\/no-sub-token does not hold a JWT with a subject/,
    ],
    [
      { KAFKA_SSL: true, KAFKA_SASL_MECHANISM: 'OAUTHBEARER', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: '/s/token' },
      /KAFKA_SASL_USERNAME: is set but OAUTHBEARER takes a token/,
    ],
    [
      { KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: '/s/token' },
      /KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: is set but KAFKA_SASL_MECHANISM is SCRAM-SHA-512/,
    ],
    [{ KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: '/s/token' }, /KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: is set but KAFKA_SASL_MECHANISM is empty/],
  ] as const)('refuses OAUTHBEARER settings %j naming the setting', (settings, message) => {
    expect(() => resolveKafkaSecurity(settings, read)).toThrow(message);
  });

  it('refuses an unknown mechanism when the config is loaded', () => {
    expect(() => loadConfig(Type.Object(KafkaConfig), { KAFKA_SASL_MECHANISM: 'GSSAPI' })).toThrow(/KAFKA_SASL_MECHANISM/);
  });
});

describe('driver options', () => {
  const security = resolveKafkaSecurity(
    { KAFKA_SSL: true, KAFKA_SSL_CA: CA, KAFKA_SSL_SERVERNAME: 'b', KAFKA_SASL_MECHANISM: 'SCRAM-SHA-256', KAFKA_SASL_USERNAME: 'u', KAFKA_SASL_PASSWORD: 'p' },
    read,
  );

  it('hands TLS (always verifying) and SASL to @platformatic/kafka', () => {
    expect(platformaticSecurity(security)).toEqual({
      tls: { ca: CA, cert: undefined, key: undefined, passphrase: undefined, servername: 'b', rejectUnauthorized: true },
      sasl: { mechanism: 'SCRAM-SHA-256', username: 'u', password: 'p' },
    });
    expect(platformaticSecurity(undefined)).toEqual({});
  });

  it('hands each driver the OAUTHBEARER token as a provider it calls at every authentication', async () => {
    const oauth = resolveKafkaSecurity({ KAFKA_SSL: true, KAFKA_SASL_MECHANISM: 'OAUTHBEARER', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: '/s/token' }, read);
    files['/s/token'] = jwt({ sub: 'processor', n: 1 });
    const platformatic = platformaticSecurity(oauth).sasl;
    const kafkajs = kafkajsSecurity(oauth).sasl;
    if (typeof platformatic?.token !== 'function' || !kafkajs || !('oauthBearerProvider' in kafkajs)) throw new Error('no token provider');
    expect([platformatic.mechanism, await platformatic.token(), await kafkajs.oauthBearerProvider()]).toEqual([
      'OAUTHBEARER',
      jwt({ sub: 'processor', n: 1 }),
      { value: jwt({ sub: 'processor', n: 1 }) },
    ]);
    files['/s/token'] = jwt({ sub: 'processor', n: 2 });
    expect(await kafkajs.oauthBearerProvider()).toEqual({ value: jwt({ sub: 'processor', n: 2 }) });
  });

  it("makes the broker's refusal document (RFC 7628) an authentication error for @platformatic/kafka", () => {
    const check = (bytes: string) => {
      let seen: Error | null | undefined;
      refusedTokenCheck(Buffer.from(bytes), (error) => (seen = error));
      return seen;
    };
    expect(check('')).toBeNull();
    expect(check('{"status":"invalid_token"}')?.message).toBe('the broker refused the token (invalid_token)');
  });

  it('hands them to kafkajs with its lower-case mechanism names', () => {
    expect(kafkajsSecurity(security)).toMatchObject({ ssl: { ca: CA, servername: 'b', rejectUnauthorized: true }, sasl: { mechanism: 'scram-sha-256' } });
    expect(kafkajsSecurity({ sasl: { mechanism: 'PLAIN', username: 'u', password: 'p', passwordSetting: 'KAFKA_SASL_PASSWORD' } }).sasl).toEqual({
      mechanism: 'plain',
      username: 'u',
      password: 'p',
    });
  });
});

describe('explainKafkaSecurityFailure', () => {
  const security = resolveKafkaSecurity(
    { KAFKA_SSL: true, KAFKA_SSL_CA: CA, KAFKA_SASL_MECHANISM: 'SCRAM-SHA-512', KAFKA_SASL_USERNAME: 'ingest', KAFKA_SASL_PASSWORD: 'p' },
    read,
  );
  const authFailed = toKafkaError('kafka admin listTopics', new Error('SASL authentication failed.'), () => ({
    retryable: false,
    unavailable: false,
    rebalance: false,
    authentication: true,
  }));

  it('names the password setting, the user and the mechanism when SASL fails', () => {
    expect(authFailed).toBeInstanceOf(KafkaError);
    expect(authFailed).toMatchObject({ code: 'kafka_auth_failed', retryable: false });
    expect(explainKafkaSecurityFailure(authFailed, 'b:9', security)?.message).toMatch(
      /^KAFKA_SASL_PASSWORD: authentication failed for user ingest \(SCRAM-SHA-512\)/,
    );
  });

  it('names the token file and its subject when the broker refuses an OAUTHBEARER token', () => {
    files['/s/token'] = jwt({ sub: 'processor' });
    const oauth = resolveKafkaSecurity({ KAFKA_SSL: true, KAFKA_SASL_MECHANISM: 'OAUTHBEARER', KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: '/s/token' }, read);
    expect(explainKafkaSecurityFailure(authFailed, 'b:9', oauth)?.message).toMatch(
      /^KAFKA_SASL_OAUTHBEARER_TOKEN_FILE: the broker refused the token of subject processor \(OAUTHBEARER\)/,
    );
  });

  it('names KAFKA_SSL_CA for an untrusted certificate, KAFKA_SSL_SERVERNAME for a wrong name', () => {
    const untrusted = new Error('connect failed', {
      cause: Object.assign(new Error('self-signed certificate in certificate chain'), { code: 'SELF_SIGNED_CERT_IN_CHAIN' }),
    });
    expect(explainKafkaSecurityFailure(untrusted, 'b:9', security)).toMatchObject({
      code: 'kafka_auth_failed',
      message: expect.stringMatching(/^KAFKA_SSL_CA: the broker's certificate is not trusted \(SELF_SIGNED_CERT_IN_CHAIN\)/),
    });
    const wrongName = { errors: [{ code: 'ERR_TLS_CERT_ALTNAME_INVALID' }] };
    expect(explainKafkaSecurityFailure(wrongName, 'b:9', security)?.message).toMatch(/^KAFKA_SSL_SERVERNAME:/);
  });

  it('leaves other failures (Kafka down) to the clients retries', () => {
    expect(explainKafkaSecurityFailure(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), 'b:9', security)).toBeUndefined();
  });
});
