import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import { AppError } from './errors.js';
import type { Logger } from './logger.js';
import { connectRedis, createRedis } from './redis.js';
import { isRedisRole, REDIS_KEY_FAMILIES, REDIS_ROLE_GRANTS, REDIS_ROLES, type RedisKeyFamilyName, type RedisRole, redisAclRules } from './redis-acl.js';

/**
 * Creating and checking the role users of redis-acl.ts, as an admin (a user with ACL rights):
 * `ingest setup` (REDIS_ADMIN_URL, REDIS_ROLE_PASSWORDS), the local stack through it, and tests.
 */

/** `gateway=pw,console=pw,...` (REDIS_ROLE_PASSWORDS) as a map; an unknown role or an empty password is an error naming it. */
export function parseRedisRolePasswords(text: string): Partial<Record<RedisRole, string>> {
  const out: Partial<Record<RedisRole, string>> = {};
  for (const pair of text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    const at = pair.indexOf('=');
    const role = at < 0 ? pair : pair.slice(0, at);
    if (!isRedisRole(role)) throw new AppError('invalid_config', `REDIS_ROLE_PASSWORDS: unknown role '${role}' (roles: ${REDIS_ROLES.join(', ')})`);
    if (at < 0 || pair.length === at + 1) throw new AppError('invalid_config', `REDIS_ROLE_PASSWORDS: no password for '${role}'`);
    out[role] = pair.slice(at + 1);
  }
  return out;
}

/** Creates or resets each role's user with its rules and password (ACL SETUSER ... reset: the rules are exactly these). */
export async function applyRedisAcl(admin: Redis, passwords: Partial<Record<RedisRole, string>>, keyPrefix = ''): Promise<RedisRole[]> {
  const applied: RedisRole[] = [];
  for (const role of REDIS_ROLES) {
    const password = passwords[role];
    if (password === undefined) continue;
    const passwordSha256 = createHash('sha256').update(password).digest('hex');
    await admin.call('ACL', 'SETUSER', role, ...redisAclRules(role, { passwordSha256, keyPrefix }));
    applied.push(role);
  }
  return applied;
}

/**
 * Writes the server's users to its ACL file (ACL SAVE), so a restart of Redis keeps the role
 * users: without it a restarted Redis refuses every service (WRONGPASS) until setup runs again.
 * `not_configured`: the server has no aclfile and keeps users in memory only (docs/security.md,
 * "Redis users").
 */
export async function persistRedisAcl(admin: Redis): Promise<'saved' | 'not_configured'> {
  try {
    await admin.call('ACL', 'SAVE');
    return 'saved';
  } catch (err) {
    if (err instanceof Error && /not configured to use an ACL file/i.test(err.message)) return 'not_configured';
    throw err;
  }
}

/** A key of a family's pattern, for ACL DRYRUN. */
function sampleKey(family: RedisKeyFamilyName, keyPrefix: string): string {
  return keyPrefix + REDIS_KEY_FAMILIES[family].pattern.replace(/\*/g, 'acl-check');
}

/**
 * What is wrong with the server's role users, checked by what they may do (ACL DRYRUN, Redis 7):
 * each user exists and is on, each grant's command runs on each of its families, and a role
 * reaches no family it has no grant for (a GET there is refused). Empty when all is right.
 */
export async function checkRedisAcl(admin: Redis, keyPrefix = ''): Promise<string[]> {
  const problems: string[] = [];
  const dryRun = async (role: RedisRole, ...command: string[]): Promise<string> => {
    try {
      return String(await admin.call('ACL', 'DRYRUN', role, ...command));
    } catch (err) {
      return err instanceof Error ? err.message : String(err);
    }
  };
  for (const role of REDIS_ROLES) {
    const user = (await admin.call('ACL', 'GETUSER', role)) as unknown[] | null;
    if (user === null) {
      problems.push(`Redis user '${role}' does not exist`);
      continue;
    }
    const flags = (user[user.indexOf('flags') + 1] as string[] | undefined) ?? [];
    if (!flags.includes('on')) problems.push(`Redis user '${role}' is off`);
    const granted = new Set<RedisKeyFamilyName>();
    for (const grant of REDIS_ROLE_GRANTS[role].grants) {
      for (const family of grant.families) {
        granted.add(family);
        // A read of the grant, with the family's key (DRYRUN checks the arity too).
        const command = ['get', 'llen', 'hget', 'hmget'].find((c) => grant.commands.includes(c)) ?? 'get';
        const answer = await dryRun(role, command, sampleKey(family, keyPrefix), ...(command.startsWith('h') ? ['field'] : []));
        if (answer !== 'OK') problems.push(`Redis user '${role}' cannot ${command.toUpperCase()} ${REDIS_KEY_FAMILIES[family].pattern}: ${answer}`);
      }
    }
    for (const family of Object.keys(REDIS_KEY_FAMILIES) as RedisKeyFamilyName[]) {
      if (granted.has(family)) continue;
      const answer = await dryRun(role, 'get', sampleKey(family, keyPrefix));
      if (answer === 'OK') problems.push(`Redis user '${role}' can read ${REDIS_KEY_FAMILIES[family].pattern}, which is not its own`);
    }
    if ((await dryRun(role, 'flushall')) === 'OK') problems.push(`Redis user '${role}' can FLUSHALL`);
  }
  return problems;
}

/**
 * What `ingest setup` does with REDIS_ADMIN_URL: creates the role users it has passwords for
 * (REDIS_ROLE_PASSWORDS), then checks all of them; a problem fails setup with every problem
 * named (never a password). Returns the roles it created or reset.
 */
export async function ensureRedisRoleUsers(options: {
  adminUrl: string;
  tlsCa?: string | undefined;
  rolePasswords: string;
  keyPrefix: string;
  logger: Logger;
}): Promise<RedisRole[]> {
  const passwords = parseRedisRolePasswords(options.rolePasswords);
  const admin = createRedis({ url: options.adminUrl, ...(options.tlsCa === undefined ? {} : { tlsCa: options.tlsCa }), logger: options.logger });
  try {
    await connectRedis(admin, 'REDIS_ADMIN_URL');
  } catch (err) {
    // Not close(): a client that never connected would wait for its reconnects to end.
    admin.disconnect();
    throw err;
  }
  try {
    const applied = await applyRedisAcl(admin, passwords, options.keyPrefix);
    // Saved before the check, so the file holds what the server holds even when the check fails.
    const persisted = applied.length > 0 ? await persistRedisAcl(admin) : 'unchanged';
    if (persisted === 'not_configured')
      options.logger.warn(
        { roles: applied },
        'redis keeps the role users in memory only (no aclfile): a restart of Redis loses them and the services are refused until setup runs again; see docs/security.md, "Redis users"',
      );
    const problems = await checkRedisAcl(admin, options.keyPrefix);
    if (problems.length > 0)
      throw new AppError(
        'redis_acl_mismatch',
        `the Redis role users differ from redis-acl.ts (set REDIS_ROLE_PASSWORDS to create them; docs/security.md, "Redis users"): ${problems.join('; ')}`,
      );
    options.logger.info({ created: applied, roles: REDIS_ROLES, keyPrefix: options.keyPrefix, persisted }, 'redis role users checked');
    return applied;
  } finally {
    await admin.close();
  }
}
