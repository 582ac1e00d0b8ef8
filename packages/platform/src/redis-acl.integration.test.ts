/**
 * The role users of redis-acl.ts on a real redis-server of the test's own (created as `ingest
 * setup` creates them): the gateway's credentials reach no session or parked-event key, run only
 * the allowance scripts' commands on allowance keys, and every refusal is an error log line
 * naming the role, the command and the key family. `checkRedisAcl` (what setup checks) passes on
 * these users and names a user that reaches too far.
 */
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { type RedisWithRoles, startOwnRedis, startRedisWithRoles } from '@ingest/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from './logger.js';
import { ALLOWANCE_COMMANDS, redisKeyFamilyOf } from './redis-acl.js';
import { applyRedisAcl, checkRedisAcl, ensureRedisRoleUsers, parseRedisRolePasswords } from './redis-acl.setup.js';
import { connectRedis, createRedis, type Redis } from './redis.js';
import type { Closeable } from './lifecycle.js';

let own: RedisWithRoles;
let admin: Redis & Closeable;
let gateway: Redis & Closeable;
const lines: Record<string, unknown>[] = [];

/** A logger whose lines land in `into`, parsed. */
function capturingLogger(service: string, into: Record<string, unknown>[]): ReturnType<typeof createLogger> {
  return createLogger({
    service,
    destination: new Writable({
      write(chunk: Buffer, _enc, done) {
        into.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    }),
  });
}

beforeAll(async () => {
  own = await startRedisWithRoles();
  admin = createRedis({ url: own.url });
  await connectRedis(admin);
  gateway = createRedis({ url: own.roleUrls.gateway, logger: capturingLogger('gateway', lines) });
  await connectRedis(gateway);
});

afterAll(async () => {
  await gateway?.close();
  await admin?.close();
  await own?.close();
});

const SESSION_KEY = `dashboard:session:${createHash('sha256').update('t').digest('hex')}`;
const PARK_KEY = 'crm:park:{parked}:list:acc_victim';

async function refusal(work: Promise<unknown>): Promise<string> {
  try {
    await work;
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('the command was allowed');
}

describe('Redis role users', () => {
  it("the gateway's user cannot read or write session or parked-event keys (NOPERM), and the refusal is logged naming role and key pattern", async () => {
    expect(await gateway.call('ACL', 'WHOAMI').catch((e: Error) => e.message)).toMatch(/NOPERM/);
    expect(await refusal(gateway.get(SESSION_KEY))).toMatch(/^NOPERM/);
    expect(await refusal(gateway.set(SESSION_KEY, '{"v":1,"accountId":"acc_victim"}'))).toMatch(/^NOPERM/);
    expect(await refusal(gateway.rpush(PARK_KEY, 'forged'))).toMatch(/^NOPERM/);
    expect(await refusal(gateway.get('crm:park:{parked}:totals'))).toMatch(/^NOPERM/);
    // Nor through a script: its declared keys and its calls are checked.
    expect(await refusal(gateway.eval("return redis.call('SET', KEYS[1], 'x')", 1, SESSION_KEY))).toMatch(/^NOPERM/);
    expect(await refusal(gateway.eval("return redis.call('SET', 'dashboard:session:x', 'x')", 1, 'quota:{acc_1}:202611'))).toMatch(/can't access/);
    // Nothing was written.
    expect(await admin.exists(SESSION_KEY, PARK_KEY, 'dashboard:session:x')).toBe(0);
    await expect.poll(() => lines.filter((l) => l.msg?.toString().startsWith('redis refused')).length).toBeGreaterThanOrEqual(6);
    const refused = lines.filter((l) => l.msg?.toString().startsWith('redis refused'));
    expect(refused).toContainEqual(expect.objectContaining({ level: 'error', role: 'gateway', command: 'get', keyPattern: 'dashboard:session:*' }));
    expect(refused).toContainEqual(expect.objectContaining({ role: 'gateway', command: 'set', keyPattern: 'dashboard:session:*' }));
    expect(refused).toContainEqual(expect.objectContaining({ role: 'gateway', command: 'rpush', keyPattern: 'crm:park:*' }));
    expect(refused).toContainEqual(expect.objectContaining({ role: 'gateway', command: 'eval', keyPattern: 'quota:*' }));
    // No value or key of the command in the line.
    expect(JSON.stringify(refused)).not.toContain('acc_victim');
  });

  it('on allowance keys the gateway runs only the commands of the allowance scripts and reads', async () => {
    const counter = 'quota:{acc_acl}:202611';
    expect(await gateway.eval("redis.call('INCRBY', KEYS[1], 5) return redis.call('GET', KEYS[1])", 1, counter)).toBe('5');
    expect(await gateway.mget(counter, 'quota:{acc_acl}:202611:refused')).toEqual(['5', null]);
    for (const command of [
      () => gateway.del(counter),
      () => gateway.rename(counter, 'quota:{acc_acl}:x'),
      () => gateway.keys('quota:*'),
      () => gateway.scan(0, 'MATCH', 'quota:*'),
      () => gateway.flushall(),
      () => gateway.call('CONFIG', 'SET', 'requirepass', ''),
    ])
      expect(await refusal(command())).toMatch(/^NOPERM/);
    expect(await refusal(gateway.eval("return redis.call('DEL', KEYS[1])", 1, counter))).toMatch(/^ERR The user executing the script can't/);
    // The grant is the list the scripts need, nothing that deletes wholesale.
    expect(ALLOWANCE_COMMANDS).not.toContain('del');
    expect(await admin.get(counter)).toBe('5');
  });

  it("setup's check passes on these users and names a user that reaches another role's keys", async () => {
    expect(await checkRedisAcl(admin)).toEqual([]);
    await admin.call('ACL', 'SETUSER', 'gateway', '~dashboard:session:*', '+get');
    try {
      expect(await checkRedisAcl(admin)).toContain("Redis user 'gateway' can read dashboard:session:*, which is not its own");
    } finally {
      await applyRedisAcl(admin, { gateway: decodeURIComponent(new URL(own.roleUrls.gateway).password) });
    }
    expect(await checkRedisAcl(admin)).toEqual([]);
    await admin.call('ACL', 'DELUSER', 'processor');
    expect(await checkRedisAcl(admin)).toContain("Redis user 'processor' does not exist");
  });

  it('setup (REDIS_ADMIN_URL): fails naming a missing user, creates the users it has passwords for, then passes', async () => {
    await admin.call('ACL', 'DELUSER', 'processor');
    const logger = createLogger({ service: 'setup', level: 'silent' });
    const ensure = (rolePasswords: string) => ensureRedisRoleUsers({ adminUrl: own.url, rolePasswords, keyPrefix: '', logger });
    await expect(ensure('')).rejects.toMatchObject({ code: 'redis_acl_mismatch', message: expect.stringContaining("Redis user 'processor' does not exist") });
    const password = decodeURIComponent(new URL(own.roleUrls.processor).password);
    expect(await ensure(`processor=${password}`)).toEqual(['processor']);
    expect(await ensure('')).toEqual([]);
    const processor = createRedis({ url: own.roleUrls.processor });
    await connectRedis(processor);
    expect(await processor.ping()).toBe('PONG');
    await processor.close();
    // A wrong admin password is the start-up error of REDIS_ADMIN_URL, without the password.
    const refused = await ensureRedisRoleUsers({ adminUrl: `redis://:wrong-admin-pw@127.0.0.1:${own.port}`, rolePasswords: '', keyPrefix: '', logger }).catch(
      (e: Error) => e,
    );
    expect(String((refused as Error).message)).toMatch(/^REDIS_ADMIN_URL: Redis refused the credentials/);
    expect(String((refused as Error).message)).not.toContain('wrong-admin-pw');
  });
});

describe('role users across a restart of Redis', () => {
  it('setup saves them into the ACL file, so a restarted Redis still has them; without an ACL file it warns', async () => {
    const password = 'admin-pw-acl-file';
    const persistent = await startOwnRedis({ password, aclFile: true, appendOnly: true });
    const captured: Record<string, unknown>[] = [];
    const logger = capturingLogger('setup', captured);
    try {
      const rolePasswords = 'gateway=gw-pw-1,processor=pr-pw-1';
      expect(await ensureRedisRoleUsers({ adminUrl: persistent.url, rolePasswords, keyPrefix: '', logger }).catch((e: Error) => e.message)).toEqual(
        // Two of four: the check names the others, after the two were created and saved.
        expect.stringContaining("Redis user 'console' does not exist"),
      );
      await persistent.stop();
      await persistent.start();
      const asGateway = createRedis({ url: `redis://gateway:gw-pw-1@127.0.0.1:${persistent.port}` });
      await connectRedis(asGateway);
      expect(await asGateway.ping()).toBe('PONG');
      await asGateway.close();
      // The default user still needs its password after the restart (the ACL file carries it, not requirepass).
      const anonymous = createRedis({ url: `redis://127.0.0.1:${persistent.port}` });
      await expect(connectRedis(anonymous)).rejects.toMatchObject({ code: 'redis_auth_failed' });
      anonymous.disconnect();
      expect(captured.filter((l) => String(l.msg).startsWith('redis keeps the role users in memory only'))).toEqual([]);
    } finally {
      await persistent.close();
    }
    // The shared fixture's Redis has no ACL file: setup says the users will not survive a restart.
    const processorPassword = decodeURIComponent(new URL(own.roleUrls.processor).password);
    expect(await ensureRedisRoleUsers({ adminUrl: own.url, rolePasswords: `processor=${processorPassword}`, keyPrefix: '', logger })).toEqual(['processor']);
    expect(captured.filter((l) => String(l.msg).startsWith('redis keeps the role users in memory only')).map((l) => l.level)).toEqual(['warn']);
  });
});

describe('the OAuth and second-factor families (console and crm-sink)', () => {
  it('allow each role the commands its code sends there, and refuse the rest', async () => {
    const dry = async (role: string, ...command: string[]) => String(await admin.call('ACL', 'DRYRUN', role, ...command));
    const allowed: [string, ...string[]][] = [
      ['console', 'set', 'dashboard:2fa:used:own_1:123', '1', 'EX', '90', 'NX'],
      ['console', 'get', 'dashboard:2fa:pending:own_1'],
      ['console', 'del', 'dashboard:2fa:pending:own_1'],
      ['console', 'incr', 'dashboard:oauth:pending:acc_1'],
      ['console', 'set', 'dashboard:oauth:state:abc', 'v', 'PX', '600000'],
      ['console', 'llen', 'crm:oauth:revoke'],
      ['console', 'rpush', 'crm:oauth:revoke', '{}'],
      ['console', 'hget', 'crm:oauth:token:acc_1/hubspot', 'json'],
      ['crm-sink', 'lpop', 'crm:oauth:revoke', '10'],
      ['crm-sink', 'rpush', 'crm:oauth:revoke', '{}'],
      ['crm-sink', 'hset', 'crm:oauth:token:acc_1/hubspot', 'stamp', '1', 'json', '{}'],
      ['crm-sink', 'set', 'crm:oauth:token:acc_1/hubspot:lease', 't', 'PX', '30000', 'NX'],
      ['crm-sink', 'del', 'crm:oauth:token:acc_1/hubspot'],
    ];
    for (const [role, ...command] of allowed) expect(await dry(role, ...command), `${role} ${command.join(' ')}`).toBe('OK');
    const refused: [string, ...string[]][] = [
      ['gateway', 'hget', 'crm:oauth:token:acc_1/hubspot', 'json'],
      ['gateway', 'rpush', 'crm:oauth:revoke', '{}'],
      ['console', 'hset', 'crm:oauth:token:acc_1/hubspot', 'json', '{}'],
      ['console', 'lpop', 'crm:oauth:revoke'],
      ['crm-sink', 'get', 'dashboard:2fa:pending:own_1'],
      ['processor', 'get', 'dashboard:oauth:state:abc'],
    ];
    for (const [role, ...command] of refused) expect(await dry(role, ...command), `${role} ${command.join(' ')}`).not.toBe('OK');
  });
});

describe('REDIS_ROLE_PASSWORDS and key families', () => {
  it('parses role=password pairs and refuses an unknown role or an empty password', () => {
    expect(parseRedisRolePasswords('gateway=a1, crm-sink=b=2')).toEqual({ gateway: 'a1', 'crm-sink': 'b=2' });
    expect(() => parseRedisRolePasswords('sink=x')).toThrow(/unknown role 'sink'/);
    expect(() => parseRedisRolePasswords('console=')).toThrow(/no password for 'console'/);
  });

  it('names the family of a key, after any prefix', () => {
    expect(redisKeyFamilyOf('dashboard:session:abc')?.pattern).toBe('dashboard:session:*');
    expect(redisKeyFamilyOf('live-1:crm:park:{parked}:due')?.pattern).toBe('crm:park:*');
    expect(redisKeyFamilyOf('crm:{acc_1}:e1:r1')?.pattern).toBe('crm:{*');
    expect(redisKeyFamilyOf('t:quota:{acc}:seen')?.pattern).toBe('quota:*');
    expect(redisKeyFamilyOf('crm:oauth:revoke')?.pattern).toBe('crm:oauth:revoke');
    expect(redisKeyFamilyOf('p:crm:oauth:token:acc/x:lease')?.pattern).toBe('crm:oauth:token:*');
    expect(redisKeyFamilyOf('nothing-known')).toBeUndefined();
  });
});
