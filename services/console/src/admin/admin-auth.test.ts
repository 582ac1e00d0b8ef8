import type { AdminCredential } from '@ingest/domain';
import { hashAdminToken } from '@ingest/domain';
import { describe, expect, it } from 'vitest';
import { createAdminAuth } from './admin-auth.js';

const CURRENT = 'current-admin-token-0123456789abcdef';
const PREVIOUS = 'previous-admin-token-0123456789abcdef';
const NAMED = 'adm_named0123456789abcdefghijklmnopqrstuvwxyzABC';
const REVOKED = 'adm_revoked0123456789abcdefghijklmnopqrstuvwxyzA';

const credential = (id: string, token: string, revokedAt: string | null): AdminCredential => ({
  id,
  name: 'ada',
  role: 'operator',
  prefix: token.slice(0, 10),
  hash: hashAdminToken(token),
  createdAt: '2026-01-01T00:00:00.000Z',
  revokedAt,
});
const directory = new Map([
  [hashAdminToken(NAMED), credential('adm_1', NAMED, null)],
  [hashAdminToken(REVOKED), credential('adm_2', REVOKED, '2026-01-02T00:00:00.000Z')],
]);
const auth = createAdminAuth({ tokens: { current: CURRENT, previous: PREVIOUS }, directory: { adminByTokenHash: (h) => directory.get(h) } });

describe('admin authentication', () => {
  it('takes ADMIN_TOKEN and ADMIN_TOKEN_PREVIOUS as the admin `admin` (two valid during a rotation)', () => {
    expect(auth(`Bearer ${CURRENT}`)).toEqual({ name: 'admin', role: 'admin', credentialId: 'env:ADMIN_TOKEN' });
    expect(auth(`bearer ${PREVIOUS}`)).toEqual({ name: 'admin', role: 'admin', credentialId: 'env:ADMIN_TOKEN_PREVIOUS' });
  });

  it('finds a named credential by its token, with its name and role; a revoked one is refused', () => {
    expect(auth(`Bearer ${NAMED}`)).toEqual({ name: 'ada', role: 'operator', credentialId: 'adm_1' });
    expect(auth(`Bearer ${REVOKED}`)).toBeUndefined();
  });

  it('without a previous token, only the current one is the environment admin', () => {
    const single = createAdminAuth({ tokens: { current: CURRENT, previous: '' }, directory: { adminByTokenHash: () => undefined } });
    expect(single(`Bearer ${CURRENT}`)?.name).toBe('admin');
    expect(single(`Bearer ${PREVIOUS}`)).toBeUndefined();
    // An empty previous token must not make an empty bearer valid.
    expect(single('Bearer ')).toBeUndefined();
  });

  it.each([
    undefined,
    '',
    'Bearer',
    'Bearer ',
    CURRENT,
    `Basic ${CURRENT}`,
    `Bearer ${CURRENT}x`,
    `Bearer ${CURRENT.slice(0, -1)}`,
    `Bearer ${CURRENT.toUpperCase()}`,
    `Bearer ${CURRENT} extra`,
  ])('refuses %j', (header) => {
    expect(auth(header)).toBeUndefined();
  });
});
