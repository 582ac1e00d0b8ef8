import { createHash, timingSafeEqual } from 'node:crypto';
import { type AdminDirectory, type AdminRole, hashAdminToken } from '@ingest/domain';
import type { FastifyRequest } from 'fastify';
import { ProblemError } from '@ingest/http';

/** Who is calling the admin API: the admin's name and role, and which credential they used. */
export interface AdminPrincipal {
  name: string;
  role: AdminRole;
  /** `env:ADMIN_TOKEN`, `env:ADMIN_TOKEN_PREVIOUS`, or the id of a credential in control.admins. */
  credentialId: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    admin?: AdminPrincipal;
  }
  interface FastifyContextConfig {
    /** The least role a route needs; default: `operator` for GET, `admin` for everything else. */
    adminRole?: AdminRole;
  }
}

/** The admin named by the ADMIN_TOKEN setting (and ADMIN_TOKEN_PREVIOUS during its rotation). */
export const ENVIRONMENT_ADMIN_NAME = 'admin';

const UNAUTHORIZED_DETAIL = 'Send an admin token as `Authorization: Bearer <token>`.';
const RANK: Readonly<Record<AdminRole, number>> = { operator: 1, admin: 2 };

/**
 * Authenticates admin API requests. The environment's tokens (ADMIN_TOKEN and, while it is
 * rotated, ADMIN_TOKEN_PREVIOUS) are the admin `admin` with role admin, compared in constant
 * time over fixed-length digests. Named credentials are looked up by the SHA-256 of the token
 * in the control plane (32 random bytes: the digest reveals nothing), so a revocation applies
 * on every gateway within the control plane's bound.
 */
export function createAdminAuth(deps: { tokens: { current: string; previous: string }; directory: Pick<AdminDirectory, 'adminByTokenHash'> }) {
  const environment = [
    { digest: sha256(deps.tokens.current), credentialId: 'env:ADMIN_TOKEN' },
    ...(deps.tokens.previous ? [{ digest: sha256(deps.tokens.previous), credentialId: 'env:ADMIN_TOKEN_PREVIOUS' }] : []),
  ];
  return (authorization: string | undefined): AdminPrincipal | undefined => {
    const candidate = /^Bearer (\S+)$/i.exec(authorization?.trim() ?? '')?.[1];
    if (candidate === undefined) return undefined;
    const digest = sha256(candidate);
    // Every environment token is compared, also after a match: the time does not say which matched.
    let matched: string | undefined;
    for (const token of environment) if (timingSafeEqual(digest, token.digest)) matched ??= token.credentialId;
    if (matched) return { name: ENVIRONMENT_ADMIN_NAME, role: 'admin', credentialId: matched };
    const named = deps.directory.adminByTokenHash(hashAdminToken(candidate));
    if (!named || named.revokedAt !== null) return undefined;
    return { name: named.name, role: named.role, credentialId: named.id };
  };
}

/** The preParsing check of every admin route: authenticated, then the route's role. */
export function requireAdmin(request: FastifyRequest, authenticate: ReturnType<typeof createAdminAuth>): void {
  const admin = authenticate(request.headers.authorization);
  if (!admin) throw new ProblemError('unauthorized', UNAUTHORIZED_DETAIL, { headers: { 'www-authenticate': 'Bearer realm="admin"' } });
  request.admin = admin;
  const needed = request.routeOptions.config.adminRole ?? (request.method === 'GET' || request.method === 'HEAD' ? 'operator' : 'admin');
  if (RANK[admin.role] < RANK[needed]) {
    throw new ProblemError('forbidden', `This needs the ${needed} role; ${admin.name} is ${admin.role === 'operator' ? 'an' : 'a'} ${admin.role}.`, {
      extensions: { code: 'admin_role', role: needed },
    });
  }
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
