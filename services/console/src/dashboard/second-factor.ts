import {
  type ControlPlane,
  matchRecoveryCode,
  openTotpSecret,
  type Owner,
  type OwnerSecretKey,
  type SealedTotpSecret,
  sealTotpSecret,
  verifyTotp,
} from '@ingest/domain';
import { type Redis, withRedis } from '@ingest/platform';
import { ProblemError } from '@ingest/http';

/**
 * The owner's second factor at sign-in and during enrolment. The TOTP secret is opened only here,
 * in memory, for one check; it is never logged or returned once enabled.
 *
 * Redis holds, under the deployment's key prefix: the pending enrolment's secret (sealed, 10
 * minutes), the time steps already used per owner (a code works once, 2 minutes), and recovery
 * codes being used (SET NX, so two concurrent sign-ins cannot both spend the same code before
 * the owner record without it is written).
 */
export interface SecondFactor {
  /** `missing`: the owner has a second factor and the request gave none. */
  check(owner: Owner, given: { totpCode?: string; recoveryCode?: string }): Promise<'ok' | 'missing' | 'wrong'>;
  /** A code of an enabled secret (disabling, changing the account's setting). */
  verifyCurrent(owner: Owner, code: string): Promise<boolean>;
  startEnrolment(owner: Owner, secret: string): Promise<void>;
  /** The pending secret when `code` matches it (the enrolment ends either way only on success). */
  confirmEnrolment(owner: Owner, code: string): Promise<SealedTotpSecret | undefined>;
}

const PENDING_SECONDS = 600;
const USED_STEP_SECONDS = 120;

export function createSecondFactor(deps: {
  redis: Redis;
  keyPrefix: string;
  keys: OwnerSecretKey[];
  controlPlane: ControlPlane;
  now: () => number;
}): SecondFactor {
  const key = (what: string, ownerId: string) => `${deps.keyPrefix}dashboard:2fa:${what}:${ownerId}`;

  function open(sealed: SealedTotpSecret, ownerId: string): string {
    try {
      return openTotpSecret(sealed, ownerId, deps.keys);
    } catch (err) {
      // A missing or rotated-away console key: the operator's to fix; the owner is told to retry later.
      throw new ProblemError('unavailable', 'The second factor cannot be checked right now; the operator has been told.', { cause: err });
    }
  }

  /** True once per (owner, time step): a code seen by an onlooker cannot be replayed. */
  async function totpOnce(owner: Owner, secret: string, code: string): Promise<boolean> {
    const step = await verifyTotp(secret, code.replace(/\s/g, ''), deps.now());
    if (step === undefined) return false;
    const first = await withRedis('second factor', deps.redis.set(`${key('used', owner.id)}:${step}`, '1', 'EX', USED_STEP_SECONDS, 'NX'));
    return first === 'OK';
  }

  async function recoveryOnce(owner: Owner, code: string): Promise<boolean> {
    const totp = owner.totp;
    const hash = totp ? matchRecoveryCode(code, totp.recoveryCodeHashes) : undefined;
    if (!totp || !hash) return false;
    const first = await withRedis('second factor', deps.redis.set(`${key('recovery', owner.id)}:${hash}`, '1', 'EX', 86_400, 'NX'));
    if (first !== 'OK') return false;
    await deps.controlPlane.updateOwnerCredentials(owner.accountId, owner.email, {
      totp: { ...totp, recoveryCodeHashes: totp.recoveryCodeHashes.filter((h) => h !== hash) },
    });
    return true;
  }

  return {
    async check(owner, given) {
      if (!owner.totp) return 'ok';
      if (given.totpCode) return (await totpOnce(owner, open(owner.totp.sealed, owner.id), given.totpCode)) ? 'ok' : 'wrong';
      if (given.recoveryCode) return (await recoveryOnce(owner, given.recoveryCode)) ? 'ok' : 'wrong';
      return 'missing';
    },
    async verifyCurrent(owner, code) {
      return owner.totp !== undefined && (await totpOnce(owner, open(owner.totp.sealed, owner.id), code));
    },
    async startEnrolment(owner, secret) {
      const [current] = deps.keys;
      if (!current) throw new ProblemError('unavailable', 'Second factors are not available: no console key is configured.');
      const sealed = sealTotpSecret(secret, owner.id, current);
      await withRedis('second factor', deps.redis.set(key('pending', owner.id), JSON.stringify(sealed), 'EX', PENDING_SECONDS));
    },
    async confirmEnrolment(owner, code) {
      const raw = await withRedis('second factor', deps.redis.get(key('pending', owner.id)));
      if (raw === null) return undefined;
      const sealed = JSON.parse(raw) as SealedTotpSecret;
      if (!(await totpOnce(owner, open(sealed, owner.id), code))) return undefined;
      await withRedis('second factor', deps.redis.del(key('pending', owner.id)));
      return sealed;
    },
  };
}
