import { lookup as dnsLookup, type LookupAddress, type LookupAllOptions } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import type { OutboundPolicy } from './outbound-policy.js';
import { buildConnector } from 'undici';

/**
 * The connect step of the CRM HTTP clients, with the outbound address policy applied to the
 * address actually dialled. Names go through `lookup` (net/tls call it before connecting), which
 * refuses the host when any address DNS returns is not allowed: checking what was resolved,
 * rather than the name when it was stored, is what defeats DNS rebinding. Literal addresses do
 * not go through lookup, so the connector checks them itself.
 */
export const ADDRESS_NOT_ALLOWED = 'ERR_CRM_ADDRESS_NOT_ALLOWED';

export class AddressNotAllowedError extends Error {
  readonly code = ADDRESS_NOT_ALLOWED;
  constructor(message: string) {
    super(message);
    this.name = 'AddressNotAllowedError';
  }
}

/** What resolves names: dns.lookup in production, a stub resolver in tests. */
export type Resolve = (hostname: string, options: LookupAllOptions, callback: (err: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void) => void;

export function guardedLookup(policy: OutboundPolicy, resolve: Resolve = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} did not resolve`), { code: 'ENOTFOUND' }), '', 0);
      for (const a of addresses) {
        const check = policy.checkAddress(a.address);
        if (!check.ok) return callback(new AddressNotAllowedError(`${hostname} resolved to ${check.reason}`), '', 0);
      }
      if (options.all) return callback(null, addresses);
      const first = addresses[0] as LookupAddress;
      return callback(null, first.address, first.family);
    });
  };
}

export interface GuardedConnectorOptions {
  policy: OutboundPolicy;
  timeoutMs: number;
  resolve?: Resolve;
}

export function guardedConnector(options: GuardedConnectorOptions): buildConnector.connector {
  const inner = buildConnector({ timeout: options.timeoutMs, lookup: guardedLookup(options.policy, options.resolve) });
  return (opts, callback) => {
    const host = opts.hostname.startsWith('[') ? opts.hostname.slice(1, -1) : opts.hostname;
    if (isIP(host) !== 0) {
      const check = options.policy.checkAddress(host);
      if (!check.ok) {
        callback(new AddressNotAllowedError(check.reason), null);
        return;
      }
    }
    inner(opts, callback);
  };
}
