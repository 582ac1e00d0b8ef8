/**
 * Real servers: Kafka (control plane), Redis, ClickHouse, through the real console app. The
 * owners' sign-in defences of issue 26: a browser that signed in before is not locked out by an
 * attacker's failures; a process-wide cap on concurrent password hashes answers 503 beyond it;
 * old (N=2^15) hashes are re-hashed at sign-in; the TOTP second factor (a wrong code is a 401
 * counted by the same throttle, codes work once, recovery codes work once), its secret never in
 * clear in the owner record, and an account's requirement of it.
 */
import {
  ADMIN_TOKEN,
  createOwner,
  type DashboardUser,
  deviceCookieOf,
  randomClientIp,
  signedInOwner,
  signInRequest,
  useGatewayFixture,
} from '@ingest/testkit/gateway';
import { hashPassword, OWNER_PASSWORD_COST } from '@ingest/domain';
import { generate } from 'otplib';
import { describe, expect, it } from 'vitest';

// Small per-email budget so the test stays short; one hash at a time so the cap is easy to reach.
const gw = useGatewayFixture({
  DASHBOARD_SIGNIN_LIMIT_PER_EMAIL: '4',
  DASHBOARD_SIGNIN_LIMIT_PER_ACCOUNT: '50',
  DASHBOARD_SIGNIN_LIMIT_PER_MINUTE: '1000',
  DASHBOARD_PASSWORD_HASH_CONCURRENCY: '1',
});

/** Enrols TOTP through the dashboard API as the web app does; returns the secret and recovery codes. */
async function enrol(user: DashboardUser): Promise<{ secret: string; recoveryCodes: string[] }> {
  const started = await user.request({ method: 'POST', url: '/dashboard/api/totp/enrolment' });
  expect(started.statusCode, started.body).toBe(200);
  const { secret, uri } = started.json() as { secret: string; uri: string };
  expect(uri).toContain(`secret=${secret}`);
  const wrong = await user.request({ method: 'POST', url: '/dashboard/api/totp/enrolment/confirm', payload: { code: '000000' } });
  expect(wrong.statusCode).toBe(400);
  const confirmed = await user.request({ method: 'POST', url: '/dashboard/api/totp/enrolment/confirm', payload: { code: await generate({ secret }) } });
  expect(confirmed.statusCode, confirmed.body).toBe(200);
  return { secret, recoveryCodes: (confirmed.json() as { recoveryCodes: string[] }).recoveryCodes };
}

describe('owner sign-in defences', () => {
  it("an attacker's failures lock the email, not the browser that signed in before", async () => {
    const { account } = await gw.newAccount('free');
    const owner = await signedInOwner(gw, account.id);
    // Its sign-in was the email's first attempt of the window; three failures spend the rest.
    for (let i = 0; i < 3; i++) expect((await signInRequest(gw.console, owner.email, 'wrong-password-123', randomClientIp())).statusCode).toBe(401);
    // The attacker (no device cookie) is refused even with the right password...
    expect((await signInRequest(gw.console, owner.email, owner.password, randomClientIp())).statusCode).toBe(429);
    // ...the owner's browser is not, from any address.
    const known = await signInRequest(gw.console, owner.email, owner.password, randomClientIp(), { cookie: owner.deviceCookie });
    expect(known.statusCode, known.body).toBe(200);
    // A device cookie of another owner (or a forged one) picks no budget of its own.
    const other = await signedInOwner(gw, account.id);
    expect((await signInRequest(gw.console, owner.email, owner.password, randomClientIp(), { cookie: other.deviceCookie })).statusCode).toBe(429);
    const forged = owner.deviceCookie.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A'));
    expect((await signInRequest(gw.console, owner.email, owner.password, randomClientIp(), { cookie: forged })).statusCode).toBe(429);
    // The known device has a budget of its own (its sign-in above was the first), bounded too.
    expect(deviceCookieOf(known)).toBe(owner.deviceCookie);
    for (let i = 0; i < 3; i++) {
      expect((await signInRequest(gw.console, owner.email, 'wrong-password-123', randomClientIp(), { cookie: deviceCookieOf(known) })).statusCode).toBe(401);
    }
    const spent = await signInRequest(gw.console, owner.email, owner.password, randomClientIp(), { cookie: deviceCookieOf(known) });
    expect(spent.statusCode).toBe(429);
    expect(spent.json()).toMatchObject({ limit: 'sign-in per device' });
  });

  it('caps concurrent password hashes: beyond the cap a bounded 503 problem with Retry-After, then sign-in works again', async () => {
    const { account } = await gw.newAccount('free');
    const owner = await createOwner(gw, account.id);
    const responses = await Promise.all(
      Array.from({ length: 6 }, (_, i) => signInRequest(gw.console, `nobody-${i}-${Date.now()}@example.com`, 'wrong-password-123', randomClientIp())),
    );
    // One hash runs; the others arrive while it does (a hash takes far longer than a Redis round trip).
    const statuses = responses.map((r) => r.statusCode).sort();
    expect(statuses.every((s) => s === 401 || s === 503) && statuses.filter((s) => s === 503).length >= 3, JSON.stringify(statuses)).toBe(true);
    const [busy] = responses.filter((r) => r.statusCode === 503);
    if (!busy) throw new Error('no 503');
    expect(busy.headers['content-type']).toContain('application/problem+json');
    expect(busy.headers['retry-after']).toBe('1');
    expect(busy.json()).toMatchObject({ type: '/problems/unavailable', limit: 'concurrent password hashes' });
    expect(busy.body.length).toBeLessThan(1024);
    const after = await signInRequest(gw.console, owner.email, owner.password, randomClientIp());
    expect(after.statusCode, after.body).toBe(200);
  });

  it('re-hashes a password stored with the old parameters (N=2^15) at sign-in, keeping the sessions', async () => {
    const { account } = await gw.newAccount('free');
    const email = `old-hash-${Date.now()}@example.com`;
    const password = 'an-old-password-of-2025';
    await gw.controlPlane.createOwner(account.id, email, await hashPassword(password, { N: 2 ** 15, r: 8, p: 1 }));
    const first = await signInRequest(gw.console, email, password, randomClientIp());
    expect(first.statusCode, first.body).toBe(200);
    const stored = gw.controlPlane.ownerByEmail(email)?.passwordHash ?? '';
    expect(stored.startsWith(`scrypt$${OWNER_PASSWORD_COST.N}$8$1$`), stored.slice(0, 20)).toBe(true);
    expect(gw.controlPlane.ownerByEmail(email)?.passwordChangedAt).toBeUndefined();
    expect((await signInRequest(gw.console, email, password, randomClientIp())).statusCode).toBe(200);
  });

  it('requires the TOTP code once enrolled; a wrong code is a 401 counted by the throttle; a code works once', async () => {
    const { account } = await gw.newAccount('free');
    const owner = await signedInOwner(gw, account.id);
    const { secret } = await enrol(owner);
    // The record holds the secret sealed, never in clear.
    const record = gw.controlPlane.ownerByEmail(owner.email);
    expect(record?.totp?.sealed.alg).toBe('A256GCM');
    expect(JSON.stringify(record)).not.toContain(secret);

    const ip = randomClientIp();
    const noCode = await signInRequest(gw.console, owner.email, owner.password, ip);
    expect(noCode.statusCode).toBe(401);
    expect(noCode.json()).toMatchObject({ type: '/problems/second-factor-required', secondFactor: 'totp' });
    expect(noCode.cookies.find((c) => c.name === 'ingest_dashboard')).toBeUndefined();
    // The enrolment spent the current step's code: the next step's (within the tolerance) signs in.
    const wrong = await signInRequest(gw.console, owner.email, owner.password, ip, { totpCode: '000000' });
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toMatchObject({ type: '/problems/second-factor-failed' });
    const code = await generate({ secret, epoch: Date.now() / 1000 + 30 });
    const ok = await signInRequest(gw.console, owner.email, owner.password, ip, { totpCode: code });
    expect(ok.statusCode, ok.body).toBe(200);
    // Attempts on the email so far: 4 of 4 (the first sign-in, no code, the wrong code, ok):
    // the wrong code counted, so the throttle refuses even a right code now.
    const limited = await signInRequest(gw.console, owner.email, owner.password, ip, { totpCode: await generate({ secret, epoch: Date.now() / 1000 - 30 }) });
    expect(limited.statusCode, limited.body).toBe(429);
    // The same code again (an onlooker's replay), from the owner's browser (its own budget), is refused.
    const replay = await signInRequest(gw.console, owner.email, owner.password, ip, { totpCode: code, cookie: deviceCookieOf(ok) });
    expect(replay.statusCode).toBe(401);
    expect(replay.json()).toMatchObject({ type: '/problems/second-factor-failed' });
  });

  it('signs in with a recovery code once, and spends it', async () => {
    const { account } = await gw.newAccount('free');
    const owner = await signedInOwner(gw, account.id);
    const { recoveryCodes } = await enrol(owner);
    expect(recoveryCodes).toHaveLength(10);
    const first = await signInRequest(gw.console, owner.email, owner.password, randomClientIp(), {
      cookie: owner.deviceCookie,
      recoveryCode: recoveryCodes[0],
    });
    expect(first.statusCode, first.body).toBe(200);
    const again = await signInRequest(gw.console, owner.email, owner.password, randomClientIp(), {
      cookie: owner.deviceCookie,
      recoveryCode: recoveryCodes[0],
    });
    expect(again.statusCode).toBe(401);
    expect(gw.controlPlane.ownerByEmail(owner.email)?.totp?.recoveryCodeHashes).toHaveLength(9);
    const status = await owner.request({ method: 'GET', url: '/dashboard/api/totp' });
    expect(status.json()).toMatchObject({ enabled: true, recoveryCodesLeft: 9 });
    // Turning it off needs a current code, guessed on the sign-in throttle's budget (the email's: 1 of 4 spent by the first sign-in).
    const removeWith = (code: string) => owner.request({ method: 'POST', url: '/dashboard/api/totp/remove', payload: { code } });
    for (let i = 0; i < 3; i++) expect((await removeWith('000000')).statusCode).toBe(400);
    expect((await removeWith('000000')).statusCode).toBe(429);
    expect(gw.controlPlane.ownerByEmail(owner.email)?.totp).toBeDefined();
  });

  it('an admin removes the second factor of an owner who lost it; the password alone signs in again', async () => {
    const { account } = await gw.newAccount('free');
    const owner = await signedInOwner(gw, account.id);
    await enrol(owner);
    const removed = await gw.admin.inject({
      method: 'POST',
      url: `/admin/v1/accounts/${account.id}/owners/${encodeURIComponent(owner.email)}/remove-second-factor`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(removed.statusCode, removed.body).toBe(200);
    expect(gw.controlPlane.ownerByEmail(owner.email)?.totp).toBeUndefined();
    const signIn = await signInRequest(gw.console, owner.email, owner.password, randomClientIp(), { cookie: owner.deviceCookie });
    expect(signIn.statusCode, signIn.body).toBe(200);
  });

  it("an account's requirement: only an owner with a second factor sets it; owners without one may only enrol", async () => {
    const { account } = await gw.newAccount('free');
    const withTotp = await signedInOwner(gw, account.id);
    const without = await signedInOwner(gw, account.id);
    const refused = await without.request({ method: 'PUT', url: '/dashboard/api/account/security', payload: { requireOwnerTotp: true } });
    expect(refused.statusCode).toBe(409);
    await enrol(withTotp);
    const set = await withTotp.request({ method: 'PUT', url: '/dashboard/api/account/security', payload: { requireOwnerTotp: true } });
    expect(set.statusCode, set.body).toBe(200);
    expect(set.json()).toMatchObject({ accountRequiresTotp: true });
    const keys = await without.request({ method: 'GET', url: '/dashboard/api/keys' });
    expect(keys.statusCode).toBe(403);
    expect(keys.json()).toMatchObject({ type: '/problems/second-factor-setup-required' });
    const session = await without.request({ method: 'GET', url: '/dashboard/api/session' });
    expect(session.json()).toMatchObject({ secondFactorSetupRequired: true });
    await enrol(without);
    expect((await without.request({ method: 'GET', url: '/dashboard/api/keys' })).statusCode).toBe(200);
  });
});
