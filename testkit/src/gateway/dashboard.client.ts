/**
 * A dashboard user for plain-HTTP tests: an owner created through the control plane, signed in
 * through the real sign-in route, with its cookie and CSRF token sent the way the web app does.
 */
import { hashPassword } from '@ingest/domain';
import { uniqueSuffix } from '../index.js';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { type GatewayFixture, randomClientIp } from './gateway.fixture.js';

export const DASHBOARD_HOST = 'dashboard.test';
export const DASHBOARD_ORIGIN = `http://${DASHBOARD_HOST}`;

export interface DashboardUser {
  email: string;
  password: string;
  accountId: string;
  cookie: string;
  csrfToken: string;
  /** The known-device cookie the sign-in set (`ingest_device=...`), for sign-ins from "the same browser". */
  deviceCookie: string;
  /** A request with the session cookie, this dashboard's Origin and (unless overridden) the CSRF token. */
  request(options: Omit<InjectOptions, 'headers'> & { headers?: Record<string, string | undefined> }): Promise<LightMyRequestResponse>;
}

export async function createOwner(gw: GatewayFixture, accountId: string): Promise<{ email: string; password: string }> {
  const email = `owner-${uniqueSuffix()}@example.com`;
  const password = `pw-${uniqueSuffix()}-long-enough`;
  await gw.controlPlane.createOwner(accountId, email, await hashPassword(password));
  return { email, password };
}

export function signInRequest(
  app: FastifyInstance,
  email: string,
  password: string,
  remoteAddress = randomClientIp(),
  extra: { totpCode?: string; recoveryCode?: string; cookie?: string } = {},
) {
  const { cookie, ...codes } = extra;
  return app.inject({
    method: 'POST',
    url: '/dashboard/api/session',
    headers: { host: DASHBOARD_HOST, origin: DASHBOARD_ORIGIN, 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
    payload: { email, password, ...codes },
    remoteAddress,
  });
}

/**
 * Sign-in as a client does it: a 503 because the console's password hashes are all busy (tests
 * that sign several owners in at once) is retried after its Retry-After, for at most 60 s.
 */
async function signInHonouringRetryAfter(app: FastifyInstance, email: string, password: string): Promise<LightMyRequestResponse> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const response = await signInRequest(app, email, password);
    const busy = response.statusCode === 503 && (response.json() as { limit?: string }).limit === 'concurrent password hashes';
    if (!busy || Date.now() > deadline) return response;
    await new Promise((resolve) => setTimeout(resolve, Number(response.headers['retry-after'] ?? 1) * 1000));
  }
}

export function deviceCookieOf(response: LightMyRequestResponse): string {
  const cookie = response.cookies.find((c) => c.name === 'ingest_device');
  if (!cookie) throw new Error(`no device cookie in the sign-in response (${response.statusCode})`);
  return `${cookie.name}=${cookie.value}`;
}

export function sessionCookieOf(response: LightMyRequestResponse): string {
  const cookie = response.cookies.find((c) => c.name === 'ingest_dashboard');
  if (!cookie) throw new Error(`no session cookie in the sign-in response (${response.statusCode})`);
  return `${cookie.name}=${cookie.value}`;
}

export async function signedInOwner(gw: GatewayFixture, accountId: string): Promise<DashboardUser> {
  const { email, password } = await createOwner(gw, accountId);
  const response = await signInHonouringRetryAfter(gw.console, email, password);
  if (response.statusCode !== 200) throw new Error(`sign-in failed: ${response.statusCode} ${response.body}`);
  const cookie = sessionCookieOf(response);
  const deviceCookie = deviceCookieOf(response);
  const csrfToken = (response.json() as { csrfToken: string }).csrfToken;
  const remoteAddress = randomClientIp();
  return {
    email,
    password,
    accountId,
    cookie,
    csrfToken,
    deviceCookie,
    request: (options) => {
      // A header given as undefined is left out (e.g. a request without Origin).
      const merged = { host: DASHBOARD_HOST, origin: DASHBOARD_ORIGIN, cookie, 'x-csrf-token': csrfToken, ...options.headers };
      const headers = Object.fromEntries(Object.entries(merged).filter(([, v]) => v !== undefined));
      return gw.console.inject({ remoteAddress, ...options, headers });
    },
  };
}
