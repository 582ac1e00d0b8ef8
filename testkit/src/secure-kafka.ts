/**
 * The secure broker of the `secure` test project: the local stack's second Kafka with TLS, SASL
 * and ACLs (`STACK_KAFKA_SECURITY=sasl_ssl scripts/stack.sh up`, which `scripts/test.sh` starts).
 * Its client settings per user are the env files the stack writes; topics are created under a
 * fresh prefix by the super user, with the services' ACLs for that prefix (kafka/acls.ts).
 */
import { createSign, type KeyObject } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  applyAcls,
  createKafkaClient,
  deleteTopics,
  ensureTopics,
  type KafkaClient,
  type KafkaDriverName,
  type KafkaRole,
  REPO_ROOT,
  resolveKafkaSecurity,
  TOPICS,
  type TopicKey,
  topicName,
} from '@ingest/platform';
import { testLogger, uniqueSuffix } from './fixtures.js';
import type { TestKafka } from './fixtures.js';

export const SECURE_USERS = ['admin', 'ingest', 'console', 'processor', 'crm-sink'] as const;
export type SecureUser = (typeof SECURE_USERS)[number];

/** The principals of the stack's users: the gateway runs as `console`, which holds ingest's grants too. */
export const SECURE_PRINCIPALS: readonly { role: KafkaRole; principal: string }[] = [
  { role: 'ingest', principal: 'User:ingest' },
  { role: 'console', principal: 'User:console' },
  { role: 'ingest', principal: 'User:console' },
  { role: 'processor', principal: 'User:processor' },
  { role: 'crm-sink', principal: 'User:crm-sink' },
];

export const SECURE_ENV_HINT =
  'the secure test project needs the secure broker: run `npm test`, or `STACK_KAFKA_SECURITY=sasl_ssl bash scripts/stack.sh up` (it writes $STACK_DIR/kafka-secure/env/<user>.env)';

function envDir(): string {
  return process.env.KAFKA_SECURE_ENV_DIR ?? join(resolve(REPO_ROOT, process.env.STACK_DIR ?? '.local'), 'kafka-secure', 'env');
}

function readEnvFile(name: string): Record<string, string> {
  let text: string;
  try {
    text = readFileSync(join(envDir(), name), 'utf8');
  } catch (err) {
    throw new Error(`${SECURE_ENV_HINT} (${(err as Error).message})`, { cause: err });
  }
  const env: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    if (at > 0 && !line.startsWith('#')) env[line.slice(0, at)] = line.slice(at + 1);
  }
  return env;
}

/**
 * An OAUTHBEARER token (an RS256 JWT) from the secure broker's local issuer
 * (env/oauth-issuer.env), written to a file of its own for KAFKA_SASL_OAUTHBEARER_TOKEN_FILE.
 * `key`, `issuer`, `audience` and `expiresInS` (negative: already expired) make tokens the
 * broker must refuse. Signed by hand: a JWT is two base64url JSON parts and a signature, and the
 * test kit needs nothing else of a JWT library.
 */
export function secureOAuthTokenFile(subject: string, options: { key?: KeyObject; issuer?: string; audience?: string; expiresInS?: number } = {}): string {
  const issuerEnv = readEnvFile('oauth-issuer.env');
  const now = Math.floor(Date.now() / 1000);
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const claims = {
    sub: subject,
    iss: options.issuer ?? issuerEnv.KAFKA_OAUTH_ISSUER,
    aud: options.audience ?? issuerEnv.KAFKA_OAUTH_AUDIENCE,
    iat: now - 5,
    exp: now + (options.expiresInS ?? 3_600),
  };
  const input = `${part({ alg: 'RS256', typ: 'JWT', kid: issuerEnv.KAFKA_OAUTH_KEY_ID })}.${part(claims)}`;
  const key = options.key ?? readFileSync(issuerEnv.KAFKA_OAUTH_ISSUER_KEY ?? '', 'utf8');
  const signature = createSign('RSA-SHA256').update(input).sign(key).toString('base64url');
  const file = join(mkdtempSync(join(tmpdir(), 'kafka-token-')), 'token');
  writeFileSync(file, `${input}.${signature}\n`, { mode: 0o600 });
  return file;
}

/** The Kafka settings of `user` (KAFKA_BROKERS, KAFKA_SSL*, KAFKA_SASL_*), as a service's environment. */
export function secureUserEnv(user: SecureUser): Record<string, string> {
  const env = readEnvFile(`${user}.env`);
  // Only the connection settings: the admin file also carries KAFKA_ACL_PRINCIPALS for setup.
  delete env.KAFKA_ACL_PRINCIPALS;
  return env;
}

/** A client of the secure broker with `user`'s settings, changed by `override` (e.g. a wrong password). */
export function secureKafkaClient(user: SecureUser, options: { override?: Record<string, string | boolean>; driver?: KafkaDriverName } = {}): KafkaClient {
  const env: Record<string, string | boolean> = { ...secureUserEnv(user), KAFKA_SSL: true, ...options.override };
  for (const [k, v] of Object.entries(env)) if (v === '') delete env[k];
  const brokers = String(env.KAFKA_BROKERS);
  return createKafkaClient({
    brokers,
    clientId: `secure-test-${user}`,
    logger: testLogger(),
    ...(options.driver ? { driver: options.driver } : {}),
    connectionTimeoutMs: 3_000,
    requestTimeoutMs: 5_000,
    security: resolveKafkaSecurity(env),
  });
}

/** Topics under a fresh prefix on the secure broker, with the services' ACLs for that prefix. */
export async function createSecureTestKafka(keys: TopicKey[]): Promise<TestKafka> {
  const prefix = `t${uniqueSuffix()}.`;
  const logger = testLogger();
  const admin = secureKafkaClient('admin');
  const specs = keys.map((k) => ({ ...TOPICS[k], partitions: Math.min(TOPICS[k].partitions, 3) }));
  await ensureTopics(admin, { prefix, specs, logger });
  await applyAcls(admin, { principals: SECURE_PRINCIPALS, topicPrefix: prefix, logger });
  return {
    kafka: admin,
    prefix,
    topic: (key) => topicName(prefix, key),
    cleanup: () =>
      deleteTopics(
        admin,
        keys.map((k) => topicName(prefix, k)),
      ),
  };
}
