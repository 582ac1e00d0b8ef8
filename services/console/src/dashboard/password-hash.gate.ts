import { ProblemError } from '@ingest/http';

/**
 * A process-wide cap on password hashes in progress. Each scrypt at OWASP's parameters holds
 * 128 MiB and a thread of libuv's pool (4 threads, shared with DNS and file reads) for a few
 * hundred milliseconds; the per-address and per-email limits bound one attacker's rate, not
 * the sum over many addresses and made-up emails. Beyond the cap a sign-in is answered 503 with
 * Retry-After at once — no queue, so nothing waits and memory stays bounded. Known and unknown
 * emails pass through the same gate (unknown ones hash against the decoy), so the answer tells
 * nothing about which emails exist.
 */
export interface PasswordHashGate {
  run<T>(hash: () => Promise<T>): Promise<T>;
  readonly inFlight: number;
}

export const HASH_BUSY = 'Sign-in is busy; retry in a second.';

export function createPasswordHashGate(max: number): PasswordHashGate {
  let inFlight = 0;
  return {
    get inFlight() {
      return inFlight;
    },
    async run(hash) {
      if (inFlight >= max) {
        throw new ProblemError('unavailable', HASH_BUSY, { headers: { 'retry-after': '1' }, extensions: { limit: 'concurrent password hashes' } });
      }
      inFlight++;
      try {
        return await hash();
      } finally {
        inFlight--;
      }
    },
  };
}
