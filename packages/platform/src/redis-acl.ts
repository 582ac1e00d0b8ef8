/**
 * Redis ACL users, one per service role, as data: which key families each role may touch and
 * with which commands. The one source of the rules: `ingest setup` creates and checks the users
 * from it, the local stack runs that setup, the tests start a redis-server with these users, and
 * a NOPERM reply is logged with the family it hit (redis.ts). Needs Redis 7 (ACL selectors,
 * ACL DRYRUN). docs/security.md, "Redis users".
 *
 * A grant is one ACL selector: its key patterns and the commands allowed on them. Redis checks a
 * command's keys against one selector at a time, and checks every call a Lua script makes, so a
 * grant lists the commands of the scripts too (and EVAL/EVALSHA for the script's declared keys).
 * Commands without keys (PING, INFO for ioredis's ready check, TIME inside scripts) are allowed
 * at the user's root; SCAN (keyless to Redis) only for the processor's reconciler.
 */

/** The roles: one Redis user each, named as the role. */
export const REDIS_ROLES = ['gateway', 'console', 'processor', 'crm-sink'] as const;
export type RedisRole = (typeof REDIS_ROLES)[number];

/** A key family: its pattern after REDIS_KEY_PREFIX, the module that owns the format, who writes it. */
export interface RedisKeyFamily {
  pattern: string;
  owner: string;
  writers: readonly RedisRole[];
  readers: readonly RedisRole[];
}

/** Every key family the services use (the inventory of docs/security.md, "Redis users"). */
export const REDIS_KEY_FAMILIES = {
  allowance: { pattern: 'quota:*', owner: 'packages/domain/src/allowance/allowance.keys.ts', writers: ['gateway', 'console', 'processor'], readers: [] },
  idempotency: { pattern: 'idem:*', owner: 'packages/http/src/jobs/idempotency.store.ts', writers: ['gateway', 'console'], readers: [] },
  keyLastUsed: { pattern: 'apikey:last-used:*', owner: 'packages/http/src/auth/key-last-used.store.ts', writers: ['gateway', 'console'], readers: [] },
  accountRate: { pattern: 'acctrate:*', owner: 'services/gateway/src/limits/account-rate.limiter.ts', writers: ['gateway'], readers: [] },
  addressRate: { pattern: 'ratelimit:*', owner: 'packages/http/src/limits/rate-limit.store.ts', writers: ['gateway', 'console'], readers: [] },
  adminRate: { pattern: 'ratelimit-admin:*', owner: 'packages/http/src/limits/rate-limit.store.ts', writers: ['console'], readers: [] },
  jobStatus: { pattern: 'job:*', owner: 'packages/domain/src/jobs/job-status.store.ts', writers: ['gateway', 'console', 'processor'], readers: [] },
  accountJobs: { pattern: 'jobs:account:*', owner: 'packages/domain/src/jobs/job-status.store.ts', writers: ['gateway', 'console', 'processor'], readers: [] },
  billingLease: { pattern: 'billing:close:*', owner: 'services/processor/src/main.ts (tryLease)', writers: ['processor'], readers: [] },
  sessions: { pattern: 'dashboard:session:*', owner: 'services/console/src/dashboard/session.store.ts', writers: ['console'], readers: [] },
  signInThrottle: { pattern: 'dashboard:signin:*', owner: 'services/console/src/dashboard/signin-throttle.ts', writers: ['console'], readers: [] },
  secondFactor: { pattern: 'dashboard:2fa:*', owner: 'services/console/src/dashboard/second-factor.ts', writers: ['console'], readers: [] },
  oauthState: { pattern: 'dashboard:oauth:*', owner: 'services/console/src/dashboard/crm-oauth/oauth-state.store.ts', writers: ['console'], readers: [] },
  /** Token sets of OAuth credentials and their refresh leases (`…:lease`). */
  oauthToken: { pattern: 'crm:oauth:token:*', owner: 'packages/domain/src/crm/oauth/oauth-token-state.ts', writers: ['crm-sink'], readers: ['console'] },
  /** One list: grants the console asks crm-sink to revoke. */
  oauthRevoke: { pattern: 'crm:oauth:revoke', owner: 'packages/domain/src/crm/oauth/oauth-token-state.ts', writers: ['console', 'crm-sink'], readers: [] },
  syncState: { pattern: 'crm:sync:*', owner: 'packages/domain/src/crm/sync-state.store.ts', writers: ['crm-sink'], readers: ['gateway', 'console'] },
  recordState: { pattern: 'crm:state:*', owner: 'packages/domain/src/crm/record-state.reader.ts', writers: ['crm-sink', 'console'], readers: [] },
  ledger: { pattern: 'crm:{*', owner: 'packages/domain/src/crm/record-state.reader.ts', writers: ['crm-sink'], readers: ['console'] },
  pendingLinks: { pattern: 'crm:links:*', owner: 'packages/domain/src/crm/record-state.reader.ts', writers: ['crm-sink', 'console'], readers: [] },
  syncHealth: { pattern: 'crm:health:*', owner: 'packages/domain/src/crm/sync-health.store.ts', writers: ['crm-sink'], readers: ['console'] },
  park: { pattern: 'crm:park:*', owner: 'services/crm-sink/src/park/park.store.ts', writers: ['crm-sink'], readers: [] },
  crmRate: { pattern: 'crm:rate:*', owner: 'services/crm-sink/src/rate/shared-token-bucket.ts', writers: ['crm-sink'], readers: [] },
  identityMap: { pattern: 'identity:*', owner: 'packages/domain/src/identity/identity-map.store.ts', writers: ['processor', 'console'], readers: ['crm-sink'] },
  identityWait: { pattern: 'crm:identity-wait:*', owner: 'services/crm-sink/src/identity/identity-wait.store.ts', writers: ['crm-sink'], readers: [] },
  connectionChecks: { pattern: 'crm:connection-checks:*', owner: 'services/crm-sink/src/rate/shared-token-bucket.ts', writers: ['crm-sink'], readers: [] },
} as const satisfies Record<string, RedisKeyFamily>;
export type RedisKeyFamilyName = keyof typeof REDIS_KEY_FAMILIES;

/** One ACL selector: these families, these commands (lower case, as ACL rules spell them). */
export interface RedisGrant {
  families: readonly RedisKeyFamilyName[];
  commands: readonly string[];
}

const SCRIPTS = ['eval', 'evalsha'];
/** The allowance scripts (allowance.scripts.ts) and its reads (allowance.ts): nothing else, no DEL, no KEYS. */
export const ALLOWANCE_COMMANDS = [
  ...SCRIPTS,
  'get',
  'mget',
  'set',
  'incrby',
  'decrby',
  'expire',
  'hget',
  'hset',
  'hincrby',
  'hdel',
  'hgetall',
  'sadd',
  'srem',
  'sismember',
  'unlink',
];
/** The per-address limiter's plugin script (@fastify/rate-limit's RedisStore). */
const ADDRESS_RATE_COMMANDS = [...SCRIPTS, 'incr', 'get', 'pexpire', 'pttl'];
const IDEMPOTENCY_COMMANDS = [...SCRIPTS, 'hget', 'hmget', 'hset', 'expire', 'del'];
const JOB_STATUS_COMMANDS = ['get', 'mget', 'set', 'zadd', 'zrevrange', 'zremrangebyrank', 'zremrangebyscore', 'zrem', 'expire', 'multi', 'exec'];
/** Reading the sink's state for a display or a dry run: no write command. */
const CRM_READ_COMMANDS = [
  'get',
  'mget',
  'hget',
  'hmget',
  'hgetall',
  'exists',
  'smembers',
  'scard',
  'zrange',
  'zrangebyscore',
  'zcard',
  'zcount',
  'zscore',
  'ttl',
  'pttl',
];
const CRM_WRITE_COMMANDS = [
  ...SCRIPTS,
  ...CRM_READ_COMMANDS,
  'set',
  'del',
  'unlink',
  'expire',
  'pexpire',
  'hset',
  'hsetnx',
  'hdel',
  'hincrby',
  'sadd',
  'srem',
  'zadd',
  'zrem',
  'rpush',
  'lpop',
  'lrange',
  'llen',
  'ltrim',
  'multi',
  'exec',
];
/** The identity map's index (identity-map.store.ts): its put script, lookups, erasure, the rebuild marker. */
const IDENTITY_MAP_COMMANDS = [...SCRIPTS, 'hget', 'hset', 'hmget', 'hdel', 'hscan', 'exists', 'set'];
const TOKEN_BUCKET_COMMANDS = [...SCRIPTS, 'hmget', 'hset', 'pexpire'];

/** Keyless commands every role needs: the connection (ioredis sends INFO as its ready check, CLIENT SETNAME when named), PING for health, TIME inside scripts. */
const ROOT_COMMANDS = ['ping', 'info', 'hello', 'client|setname', 'client|getname', 'time', 'select', 'quit'];

export const REDIS_ROLE_GRANTS: Record<RedisRole, { root: readonly string[]; grants: readonly RedisGrant[] }> = {
  gateway: {
    root: ROOT_COMMANDS,
    grants: [
      { families: ['allowance'], commands: ALLOWANCE_COMMANDS },
      { families: ['idempotency'], commands: IDEMPOTENCY_COMMANDS },
      { families: ['keyLastUsed'], commands: ['get', 'mget', 'set'] },
      { families: ['accountRate'], commands: [...SCRIPTS, 'get', 'set'] },
      // POST /v1/events's one script declares keys of both (services/gateway/src/limits/admission.ts);
      // each call it makes is still checked against its family's grant above.
      { families: ['accountRate', 'allowance'], commands: SCRIPTS },
      { families: ['addressRate'], commands: ADDRESS_RATE_COMMANDS },
      { families: ['jobStatus', 'accountJobs'], commands: JOB_STATUS_COMMANDS },
      { families: ['syncState'], commands: ['get', 'mget'] },
    ],
  },
  console: {
    // SCAN: an erasure finds the pending-link sets of the account that name the erased contact.
    root: [...ROOT_COMMANDS, 'scan'],
    grants: [
      { families: ['sessions', 'secondFactor'], commands: ['get', 'set', 'del', 'pexpire'] },
      // The OAuth state script (oauth-state.store.ts): one use per state, a count per account.
      { families: ['oauthState'], commands: [...SCRIPTS, 'get', 'set', 'del', 'incr', 'pexpire', 'pttl'] },
      // Asks crm-sink to revoke a grant: a bounded list it only appends to.
      { families: ['oauthRevoke'], commands: ['llen', 'rpush'] },
      { families: ['signInThrottle', 'addressRate', 'adminRate'], commands: ADDRESS_RATE_COMMANDS },
      { families: ['allowance'], commands: ALLOWANCE_COMMANDS },
      { families: ['idempotency'], commands: IDEMPOTENCY_COMMANDS },
      { families: ['keyLastUsed'], commands: ['get', 'mget', 'set'] },
      { families: ['jobStatus', 'accountJobs'], commands: JOB_STATUS_COMMANDS },
      { families: ['syncState', 'recordState', 'ledger', 'pendingLinks', 'syncHealth', 'oauthToken'], commands: CRM_READ_COMMANDS },
      // Erasure (packages/domain/src/erasure/crm-state.eraser.ts): the record of the erased
      // contact or company, and the pending links that name it.
      { families: ['recordState', 'pendingLinks'], commands: ['del', 'srem', 'smembers'] },
      // Erasure of the identity map's entries (identity-map.eraser.ts), after a rebuild when Redis lost it.
      { families: ['identityMap'], commands: IDENTITY_MAP_COMMANDS },
    ],
  },
  processor: {
    // SCAN: the reconciler finds the period's counters (allowance.reconciler.ts).
    root: [...ROOT_COMMANDS, 'scan'],
    grants: [
      { families: ['allowance'], commands: [...ALLOWANCE_COMMANDS, 'hkeys'] },
      { families: ['jobStatus', 'accountJobs'], commands: JOB_STATUS_COMMANDS },
      { families: ['billingLease'], commands: [...SCRIPTS, 'set', 'get', 'del'] },
      { families: ['identityMap'], commands: IDENTITY_MAP_COMMANDS },
    ],
  },
  'crm-sink': {
    root: ROOT_COMMANDS,
    grants: [
      { families: ['syncState', 'recordState', 'ledger', 'pendingLinks', 'syncHealth', 'oauthToken', 'oauthRevoke'], commands: CRM_WRITE_COMMANDS },
      { families: ['park'], commands: CRM_WRITE_COMMANDS },
      { families: ['crmRate', 'connectionChecks'], commands: TOKEN_BUCKET_COMMANDS },
      { families: ['identityMap'], commands: ['hmget', 'exists'] },
      // The wait store's scripts (identity-wait.store.ts) check an event is there with HEXISTS.
      { families: ['identityWait'], commands: [...CRM_WRITE_COMMANDS, 'hexists'] },
    ],
  },
};

/** A prefix as a literal in an ACL glob pattern. */
function globLiteral(prefix: string): string {
  return prefix.replace(/[*?[\]\\]/g, '\\$&');
}

/**
 * The rules of `ACL SETUSER <role> ...` for a role: reset (no keys, no commands, no channels),
 * on, the password (as its SHA-256, so it is not in clear in the command or the ACL file), the
 * root commands, one selector per grant.
 */
export function redisAclRules(role: RedisRole, options: { passwordSha256: string; keyPrefix?: string }): string[] {
  const { root, grants } = REDIS_ROLE_GRANTS[role];
  const prefix = globLiteral(options.keyPrefix ?? '');
  return [
    'reset',
    'on',
    `#${options.passwordSha256}`,
    ...root.map((c) => `+${c}`),
    ...grants.map((g) => `(${[...g.families.map((f) => `~${prefix}${REDIS_KEY_FAMILIES[f].pattern}`), ...g.commands.map((c) => `+${c}`)].join(' ')})`),
  ];
}

/** Glob of Redis (KEYS/ACL patterns), for the families' patterns: `*` and `?`, the rest literal. */
function globMatches(pattern: string, key: string): boolean {
  const regex = pattern
    .replace(/[.+^${}()|[\]\\]/g, '\\$&')
    .replace(/\*/g, '.*')
    .replace(/\?/g, '.');
  return new RegExp(`^${regex}$`, 's').test(key);
}

/** The family a key belongs to (after an unknown REDIS_KEY_PREFIX: the longest family pattern found at any offset), for log lines. */
export function redisKeyFamilyOf(key: string): { name: RedisKeyFamilyName; pattern: string } | undefined {
  let best: { name: RedisKeyFamilyName; pattern: string; at: number } | undefined;
  for (const [name, family] of Object.entries(REDIS_KEY_FAMILIES) as [RedisKeyFamilyName, RedisKeyFamily][]) {
    const star = family.pattern.indexOf('*');
    const stem = star < 0 ? family.pattern : family.pattern.slice(0, star);
    for (let at = key.indexOf(stem); at >= 0; at = key.indexOf(stem, at + 1)) {
      if (!globMatches(family.pattern, key.slice(at))) continue;
      if (!best || at < best.at || (at === best.at && family.pattern.length > best.pattern.length)) best = { name, pattern: family.pattern, at };
      break;
    }
  }
  return best && { name: best.name, pattern: best.pattern };
}

/** Whether a role's grants cover a family at all (any command). */
export function roleCoversFamily(role: RedisRole, family: RedisKeyFamilyName): boolean {
  return REDIS_ROLE_GRANTS[role].grants.some((g) => g.families.includes(family));
}

export function isRedisRole(name: string): name is RedisRole {
  return (REDIS_ROLES as readonly string[]).includes(name);
}
