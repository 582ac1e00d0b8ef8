import { METRIC_NAMES, type Registry, sharedCounter } from '@ingest/platform';
import { Gauge } from 'prom-client';
import type { FastifyReply, FastifyRequest, onRequestAbortAsyncHookHandler, onResponseAsyncHookHandler, preParsingAsyncHookHandler } from 'fastify';
import { ProblemError } from '../http/problem.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Gives back the upload slot this request holds; idempotent. */
    releaseUploadSlot?: () => void;
  }
}

export interface UploadLimits {
  /** Uploads (bulk bodies, CSV streams) one account may have open at once on this gateway. */
  perAccount: number;
  /** ... and one client address. */
  perAddress: number;
}

/**
 * Concurrent uploads per account and per client address, counted by this gateway replica.
 * An upload holds a socket, up to 16 MiB of bulk body or an open job whose chunks the job
 * runner buffers until the seal: twenty uploads stalled halfway by one tenant could hold all
 * of that. Per replica and in memory on purpose: a slot must be given back even when the
 * request dies with the process, and what it protects (sockets, memory) is per replica too;
 * the processor's job buffer has caps of its own for the sum over all replicas.
 */
export class UploadSlots {
  private readonly byAccount = new Map<string, number>();
  private readonly byAddress = new Map<string, number>();

  constructor(
    private readonly limits: UploadLimits,
    registry?: Registry,
  ) {
    if (registry && !registry.getSingleMetric(METRIC_NAMES.uploadsOpen)) {
      const open = () => this.open();
      new Gauge({
        name: METRIC_NAMES.uploadsOpen,
        help: 'Uploads (bulk and CSV) this gateway is receiving now',
        registers: [registry],
        collect() {
          this.set(open());
        },
      });
    }
  }

  /** A release function, or which limit refused the upload. */
  acquire(accountId: string, address: string): { release: () => void } | { refused: 'account' | 'address' } {
    if ((this.byAccount.get(accountId) ?? 0) >= this.limits.perAccount) return { refused: 'account' };
    if ((this.byAddress.get(address) ?? 0) >= this.limits.perAddress) return { refused: 'address' };
    bump(this.byAccount, accountId, 1);
    bump(this.byAddress, address, 1);
    let held = true;
    return {
      release: () => {
        if (!held) return;
        held = false;
        bump(this.byAccount, accountId, -1);
        bump(this.byAddress, address, -1);
      },
    };
  }

  /** Uploads holding a slot now. */
  open(): number {
    let n = 0;
    for (const v of this.byAccount.values()) n += v;
    return n;
  }
}

function bump(map: Map<string, number>, key: string, by: number): void {
  const next = (map.get(key) ?? 0) + by;
  if (next <= 0) map.delete(key);
  else map.set(key, next);
}

/**
 * Route hooks that take a slot before the body is read (preParsing, after authentication) and
 * give it back once the answer is sent or the client went away. `accountOf` names the
 * authenticated account (API key or dashboard session).
 */
export interface UploadSlotHooks {
  preParsing: preParsingAsyncHookHandler;
  onResponse: onResponseAsyncHookHandler;
  onRequestAbort: onRequestAbortAsyncHookHandler;
}

export function uploadSlotHooks(slots: UploadSlots, registry: Registry, accountOf: (request: FastifyRequest) => string): UploadSlotHooks {
  const refusals = sharedCounter(registry, {
    name: METRIC_NAMES.uploadRefusals,
    help: 'Uploads refused with 429 because the account or the client address had too many open at once',
    labelNames: ['scope'],
  });
  const release = async (request: FastifyRequest) => request.releaseUploadSlot?.();
  return {
    async preParsing(request: FastifyRequest, _reply: FastifyReply, payload) {
      const slot = slots.acquire(accountOf(request), request.ip);
      if ('refused' in slot) {
        refusals.inc({ scope: slot.refused });
        const who = slot.refused === 'account' ? 'account' : 'client address';
        throw new ProblemError('rateLimited', `Too many uploads at once for this ${who}; retry once one of them has finished.`, {
          headers: { 'retry-after': '5' },
          extensions: { limit: slot.refused === 'account' ? 'account_uploads' : 'ip_uploads' },
        });
      }
      request.releaseUploadSlot = slot.release;
      return payload;
    },
    onResponse: release,
    onRequestAbort: release,
  };
}
