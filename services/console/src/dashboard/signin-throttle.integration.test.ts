/**
 * Real servers: Kafka (control plane), Redis, ClickHouse, through the real gateway app. Password
 * guessing spread over many addresses is throttled per email and per account (shared Redis),
 * beside the per-address limit; another account's owners sign in untouched.
 */
import { createOwner, randomClientIp, signInRequest, useGatewayFixture } from '@ingest/testkit/gateway';
import { describe, expect, it } from 'vitest';

// Small limits so the test stays short; the per-address limit is out of the way (each attempt has its own address anyway).
const gw = useGatewayFixture({ DASHBOARD_SIGNIN_LIMIT_PER_EMAIL: '3', DASHBOARD_SIGNIN_LIMIT_PER_ACCOUNT: '5', DASHBOARD_SIGNIN_LIMIT_PER_MINUTE: '1000' });

describe('sign-in throttle', () => {
  it('limits one email over many addresses, right password included, with 429 naming the limit and Retry-After', async () => {
    const { account } = await gw.newAccount('free');
    const owner = await createOwner(gw, account.id);
    for (let i = 0; i < 3; i++) expect((await signInRequest(gw.console, owner.email, 'wrong-password-123', randomClientIp())).statusCode).toBe(401);
    const limited = await signInRequest(gw.console, owner.email, owner.password, randomClientIp());
    expect(limited.statusCode, limited.body).toBe(429);
    expect(limited.headers['content-type']).toContain('application/problem+json');
    expect(limited.json()).toMatchObject({ type: '/problems/rate-limited', limit: 'sign-in per email' });
    expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    // Unknown emails are counted the same way (no difference between known and unknown).
    const unknown = `nobody-${Date.now()}@example.com`;
    for (let i = 0; i < 3; i++) expect((await signInRequest(gw.console, unknown, 'wrong-password-123', randomClientIp())).statusCode).toBe(401);
    expect((await signInRequest(gw.console, unknown, 'wrong-password-123', randomClientIp())).statusCode).toBe(429);
  });

  it("limits one account's owners together, and leaves another account alone", async () => {
    const { account } = await gw.newAccount('free');
    const owners = [await createOwner(gw, account.id), await createOwner(gw, account.id), await createOwner(gw, account.id)];
    const { account: other } = await gw.newAccount('free');
    const bystander = await createOwner(gw, other.id);
    // 5 attempts on the account (2 + 2 + 1, under each email's 3), then its owners are refused.
    for (const [i, o] of [owners[0], owners[0], owners[1], owners[1], owners[2]].entries()) {
      expect((await signInRequest(gw.console, o?.email ?? '', 'wrong-password-123', randomClientIp())).statusCode, `attempt ${i}`).toBe(401);
    }
    const limited = await signInRequest(gw.console, owners[2]?.email ?? '', owners[2]?.password ?? '', randomClientIp());
    expect(limited.statusCode).toBe(429);
    expect(limited.json()).toMatchObject({ limit: 'sign-in per account' });
    const fine = await signInRequest(gw.console, bystander.email, bystander.password, randomClientIp());
    expect(fine.statusCode, fine.body).toBe(200);
  });
});
