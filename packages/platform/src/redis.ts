import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import type { Registry } from 'prom-client';
import { AppError } from './errors.js';
import { METRIC_NAMES, sharedHistogram } from './metrics.js';
import { redisScriptName } from './redis-script.js';
import { redisKeyFamilyOf } from './redis-acl.js';
import type { Closeable } from './lifecycle.js';
import type { Logger } from './logger.js';

export type { Redis };

export interface RedisOptions {
  url: string;
  /** Fail a command after this long instead of queueing it while Redis is away. */
  commandTimeoutMs?: number;
  /**
   * While the connection is down, fail commands at once instead of queueing them until a
   * reconnect (up to a few seconds each): for request paths (the gateway), so a request that
   * needs Redis is answered 503 at once. Call connect() before the first command.
   */
  failFast?: boolean;
  /** Connection errors are logged here (at most one line per 10 s), not printed by ioredis. */
  logger?: Logger;
  /** CA certificate(s) (PEM) to trust for a rediss:// URL, besides nothing else; default the system's CAs. */
  tlsCa?: string;
  /** Every command is timed here, from its send to its answer (ingest_redis_command_duration_seconds). */
  metrics?: Registry;
}

/** REDIS_TLS_CA_FILE's contents, or undefined when not set; an unreadable file is a start-up error naming it. */
export function readRedisTlsCa(file: string): string | undefined {
  if (file === '') return undefined;
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    throw new AppError('invalid_config', `REDIS_TLS_CA_FILE: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
}

const ERROR_LOG_INTERVAL_MS = 10_000;

/** What /readyz says of the connection (service-launcher.ts). */
export interface RedisHealth {
  /** Empty while the connection is ready; else one line naming why not (never the URL: it may hold the password). */
  waitingFor(): string[];
}

/** How /readyz names the Redis connection while it is not ready. */
export const REDIS_PART = 'redis';

export function createRedis(options: RedisOptions): Redis & Closeable & RedisHealth {
  const redis = new Redis(options.url, {
    lazyConnect: true,
    maxRetriesPerRequest: 2,
    enableOfflineQueue: !options.failFast,
    commandTimeout: options.commandTimeoutMs ?? 2_000,
    connectTimeout: 3_000,
    // No enableAutoPipelining: measured with the bench, the gateway accepted 13 % fewer events
    // and answered later (one automatic pipeline in flight at a time), for 16 % less Redis CPU
    // (docs/benchmarks.md, "Redis per request and per id").
    // rediss:// turns TLS on by itself (verifying against the system's CAs); a private CA is added here.
    ...(options.tlsCa !== undefined && options.url.startsWith('rediss:') ? { tls: { ca: options.tlsCa } } : {}),
  });
  // Without a listener ioredis prints every failed reconnect to the console, unstructured.
  let lastLoggedMs = 0;
  // The newest connection error until the connection is ready again: /readyz names it. ioredis
  // keeps reconnecting after any of them (a refused AUTH too, up to 5 s apart), so a restarted
  // Redis or role users created again are picked up without a restart of the service.
  let lastError: Error | undefined;
  redis.on('ready', () => (lastError = undefined));
  redis.on('error', (err: Error) => {
    lastError = err;
    const now = Date.now();
    if (now - lastLoggedMs < ERROR_LOG_INTERVAL_MS) return;
    lastLoggedMs = now;
    // Not the error object: ioredis attaches the failed command to a ReplyError, and for AUTH its
    // arguments are the password (found by the wrong-password start-up test).
    options.logger?.warn({ err: { type: err.name, message: err.message } }, 'redis connection error (further ones within 10 s are not logged)');
  });
  if (options.logger) logAclRefusals(redis, redisUserOf(options.url), options.logger);
  if (options.metrics) timeCommands(redis, options.metrics);
  return Object.assign(redis, {
    waitingFor: () => (redis.status === 'ready' || redis.status === 'wait' ? [] : [describeNotReady(redis.status, lastError)]),
    // quit() resolves on the server's OK, before the socket is gone; waiting for 'end' means a
    // closed client really holds no connection (clean shutdown, no open handles in tests).
    close: async () => {
      if (redis.status === 'end' || redis.status === 'wait') return;
      const ended = once(redis, 'end');
      await redis.quit().catch(() => redis.disconnect());
      await ended;
    },
  }) as Redis & Closeable & RedisHealth;
}

/**
 * `redis: credentials refused (WRONGPASS …)` or `redis: reconnecting (connect ECONNREFUSED …)`.
 * A refused AUTH is said as such: after a Redis restart that lost the role users it is the one
 * cause a wait does not cure (docs/runbook.md, "Redis refuses a service's credentials").
 */
function describeNotReady(status: string, lastError: Error | undefined): string {
  if (lastError && AUTH_REFUSED.test(lastError.message)) return `${REDIS_PART}: credentials refused (${lastError.message.trim()})`;
  return `${REDIS_PART}: ${status}${lastError ? ` (${lastError.message.trim()})` : ''}`;
}

/** The ACL user of a Redis URL (the role: docs/security.md, "Redis users"); `default` without one. */
export function redisUserOf(url: string): string {
  try {
    return decodeURIComponent(new URL(url).username) || 'default';
  } catch {
    return 'default';
  }
}

/** A refusal by the user's ACL: a command (NOPERM) or a call inside a script ("The user executing the script can't"). */
export const ACL_REFUSED = /^NOPERM|The user executing the script can't/;

interface SentCommand {
  name: string;
  args: unknown[];
  promise: Promise<unknown>;
}

/**
 * Calls `watch` once per command, at its first send (the offline queue sends a command again
 * after a reconnect), before it goes out: both watchers below see commands this way.
 */
function onFirstSend(redis: Redis, watch: (command: SentCommand) => void): void {
  const seen = new WeakSet<object>();
  const send = redis.sendCommand.bind(redis) as (command: SentCommand, ...rest: unknown[]) => unknown;
  (redis as unknown as { sendCommand: typeof send }).sendCommand = (command, ...rest) => {
    if (!seen.has(command)) {
      seen.add(command);
      watch(command);
    }
    return send(command, ...rest);
  };
}

/**
 * Times every command from its first send to its answer (or failure), by command and, for a
 * script, by the name it was registered under (redis-script.ts): the gateway's calls of a
 * request (per-address limit, then per-account limits and allowance in one script on POST
 * /v1/events) show apart beside the Kafka produce time (docs/benchmarks.md, the 202 tail). A
 * command the offline queue sends again is timed from its first send, so a reconnect shows as
 * the wait it was.
 */
function timeCommands(redis: Redis, registry: Registry): void {
  const histogram = sharedHistogram(registry, {
    name: METRIC_NAMES.redisCommandDuration,
    help: 'Time from sending a Redis command to its answer, by command and script',
    labelNames: ['command', 'script'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  });
  onFirstSend(redis, (command) => {
    const name = command.name.toLowerCase();
    const script = name === 'evalsha' ? (redisScriptName(String(command.args[0])) ?? 'unknown') : name === 'eval' ? 'eval' : '';
    const end = histogram.startTimer({ command: name, script });
    command.promise.then(
      () => end(),
      () => end(),
    );
  });
}

/**
 * Logs every command the user's ACL refuses, at error level, with the role (the URL's user), the
 * command and the key family it touched (redis-acl.ts): a missing grant or a role reaching for
 * another's keys shows in the logs, never as a silent miss, even where a caller fails open. The
 * command still fails with Redis's error: this only watches. Not the arguments (values, ids).
 */
function logAclRefusals(redis: Redis, role: string, logger: Logger): void {
  // One line per command, however often the offline queue sends it (onFirstSend).
  onFirstSend(redis, (command) => {
    command.promise.catch((err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      if (!ACL_REFUSED.test(message)) return;
      const name = command.name.toLowerCase();
      // EVAL/EVALSHA: script, number of keys, keys...; otherwise the first argument is the key.
      const scripted = name === 'eval' || name === 'evalsha';
      const key = scripted ? (Number(command.args[1]) > 0 ? command.args[2] : undefined) : command.args[0];
      const family = typeof key === 'string' || Buffer.isBuffer(key) ? redisKeyFamilyOf(String(key)) : undefined;
      logger.error(
        { role, command: name, keyPattern: family?.pattern ?? 'unknown', reason: message.split(' script:')[0] },
        'redis refused a command of this role (ACL): see docs/security.md, "Redis users"',
      );
    });
  });
}

const AUTH_REFUSED = /NOAUTH|WRONGPASS|NOPERM|invalid password|invalid username/i;

/**
 * Connects and checks that Redis accepts the credentials of the URL, at start-up: ioredis
 * reports a missing or wrong password only as "Connection is closed." (the reason goes to its
 * error event), so without this a service would fail with no hint of its setting. `setting`
 * names where the URL came from (REDIS_URL). Messages never include the URL: it may hold the
 * password.
 */
export async function connectRedis(redis: Redis, setting = 'REDIS_URL'): Promise<void> {
  let refusal: Error | undefined;
  const onError = (err: Error) => {
    if (AUTH_REFUSED.test(err.message)) refusal = err;
  };
  redis.on('error', onError);
  try {
    await redis.connect();
    await redis.ping();
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    if (refusal || AUTH_REFUSED.test(message)) {
      throw new AppError(
        'redis_auth_failed',
        `${setting}: Redis refused the credentials (${(refusal?.message ?? message).trim()}); put the password (and the ACL user) in ${setting}: redis://user:password@host:6379, or rediss:// for TLS`,
        { cause: err },
      );
    }
    throw new AppError('redis_unavailable', `${setting}: cannot connect to Redis (${message})`, { retryable: true, cause: err });
  } finally {
    redis.off('error', onError);
  }
}

/**
 * A Redis command of `what` that failed (Redis unreachable, a timeout, the retries spent) as a
 * retryable `redis_unavailable` AppError: the HTTP error handler answers it with 503 and
 * Retry-After, never with a 500. Use it where a feature fails closed without Redis.
 */
export async function withRedis<T>(what: string, work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    throw new AppError('redis_unavailable', `${what}: Redis is unavailable (${err instanceof Error ? err.message : String(err)})`, {
      retryable: true,
      cause: err,
    });
  }
}

/**
 * Every key matching the glob `pattern`, by SCAN (ioredis's scanStream, `count` keys a call):
 * never KEYS, which blocks the server for the whole keyspace at once.
 */
export async function scanKeys(redis: Redis, pattern: string, count = 1_000): Promise<string[]> {
  const keys: string[] = [];
  for await (const batch of redis.scanStream({ match: pattern, count })) keys.push(...(batch as string[]));
  return keys;
}

/** `text` (a key prefix) as a glob that matches only itself: its `* ? [ ] \` escaped. */
export function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, '\\$&');
}
