import { Type } from '@sinclair/typebox';
import ipaddr from 'ipaddr.js';

/**
 * Where the CRM sink may send requests: CRM and webhook URLs are customer input, and without a
 * policy a credential could point the sink at the cloud metadata service (169.254.169.254), a
 * database on the private network or the sink's own ops port (SSRF). The policy is checked twice:
 * when a credential is stored (a clear 400), and on every connect, on the address the name
 * resolved to (so a name that resolves to a public address when stored and to a private one
 * later — DNS rebinding — is still refused). Pure: no I/O here; the HTTP client's connector
 * calls `checkAddress` on what DNS answered.
 *
 * Deny by default: only addresses ipaddr.js classifies as global `unicast` are allowed, plus
 * NAT64 (64:ff9b::/96) addresses whose embedded IPv4 address is itself allowed. Everything else —
 * loopback, RFC 1918, RFC 4193 unique-local, link-local (169.254/16, fe80::/10), CGNAT
 * (100.64/10), multicast, unspecified, broadcast, documentation, benchmarking, 6to4, Teredo and
 * the IPv4-mapped/compatible/translated IPv6 forms of any of these — is refused. The ranges come
 * from ipaddr.js (a maintained library) rather than a hand-written list.
 */
export const CrmOutboundConfig = {
  /** Plain http:// CRM and webhook URLs; only for a local fake CRM in tests and development. */
  CRM_ALLOW_HTTP: Type.Boolean({ default: false }),
  /**
   * Comma-separated addresses/CIDRs the sink may reach although the policy would refuse them,
   * e.g. `127.0.0.1/32` for a fake CRM on loopback in tests. Empty (default): none.
   */
  CRM_ALLOWED_CIDRS: Type.String({ default: '' }),
};

export type OutboundRefusalCode = 'scheme_not_allowed' | 'address_not_allowed' | 'invalid_url' | 'credentials_in_url';

export type OutboundCheck = { ok: true } | { ok: false; code: OutboundRefusalCode; reason: string };

export interface OutboundPolicy {
  readonly allowHttp: boolean;
  /** The URL as stored: scheme, no user:password@, a literal address or a `localhost` name checked like an address. */
  checkUrl(url: string): OutboundCheck;
  /** An address DNS answered (or a literal one), right before connecting. */
  checkAddress(address: string): OutboundCheck;
}

export interface OutboundPolicyOptions {
  allowHttp?: boolean;
  /** Addresses or CIDRs, as a list or the comma-separated setting. */
  allowedCidrs?: string | readonly string[];
}

type Range = [ipaddr.IPv4 | ipaddr.IPv6, number];

function parseCidrs(value: string | readonly string[] | undefined): Range[] {
  const items = typeof value === 'string' ? value.split(',') : (value ?? []);
  return items
    .map((s) => s.trim())
    .filter((s) => s !== '')
    .map((s) => {
      try {
        if (s.includes('/')) return ipaddr.parseCIDR(s);
        const address = ipaddr.parse(s);
        return [address, address.kind() === 'ipv4' ? 32 : 128] as Range;
      } catch {
        throw new Error(`CRM_ALLOWED_CIDRS: ${JSON.stringify(s)} is not an address or CIDR`);
      }
    });
}

/** An IPv6 address that stands for an IPv4 one (mapped, compatible, translated) as that IPv4 address. */
function normalise(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (address.kind() !== 'ipv6') return address;
  const v6 = address as ipaddr.IPv6;
  const range = v6.range();
  const parts = v6.parts;
  // ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (translated, RFC 6145), ::a.b.c.d (compatible, deprecated).
  const compatible = parts.slice(0, 6).every((p) => p === 0) && (parts[6] !== 0 || (parts[7] ?? 0) > 1);
  if (range === 'ipv4Mapped' || range === 'rfc6145' || compatible) {
    const high = parts[6] ?? 0;
    const low = parts[7] ?? 0;
    return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  }
  return address;
}

function describe(range: string): string {
  const names: Record<string, string> = {
    loopback: 'loopback',
    private: 'private (RFC 1918)',
    uniqueLocal: 'private (RFC 4193 unique-local)',
    linkLocal: 'link-local',
    carrierGradeNat: 'carrier-grade NAT (RFC 6598)',
    multicast: 'multicast',
    unspecified: 'unspecified',
    broadcast: 'broadcast',
  };
  return names[range] ?? `special-purpose (${range})`;
}

function isLocalhostName(host: string): boolean {
  const h = host.toLowerCase().replace(/\.$/, '');
  return h === 'localhost' || h.endsWith('.localhost');
}

export function createOutboundPolicy(options: OutboundPolicyOptions = {}): OutboundPolicy {
  const allowHttp = options.allowHttp ?? false;
  const allowed = parseCidrs(options.allowedCidrs);

  function allowlisted(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
    return allowed.some(([net, bits]) => net.kind() === address.kind() && address.match(net, bits));
  }

  function checkParsed(original: string, parsed: ipaddr.IPv4 | ipaddr.IPv6): OutboundCheck {
    const address = normalise(parsed);
    if (allowlisted(address) || allowlisted(parsed)) return { ok: true };
    let range = address.range();
    if (range === 'rfc6052') {
      // NAT64 (DNS64 networks): allowed when the IPv4 address inside it is.
      const parts = (address as ipaddr.IPv6).parts;
      const inner = new ipaddr.IPv4([(parts[6] ?? 0) >> 8, (parts[6] ?? 0) & 0xff, (parts[7] ?? 0) >> 8, (parts[7] ?? 0) & 0xff]);
      if (allowlisted(inner)) return { ok: true };
      range = inner.range();
    }
    if (range === 'unicast') return { ok: true };
    return { ok: false, code: 'address_not_allowed', reason: `${original} is a ${describe(range)} address, which CRM requests may not reach` };
  }

  function checkAddress(raw: string): OutboundCheck {
    const text = raw.startsWith('[') && raw.endsWith(']') ? raw.slice(1, -1) : raw;
    // A zone index (fe80::1%eth0) is only meaningful for link-local addresses, which are refused anyway.
    const bare = text.split('%')[0] ?? text;
    if (!ipaddr.isValid(bare)) return { ok: false, code: 'address_not_allowed', reason: `${raw} is not an IP address` };
    return checkParsed(raw, ipaddr.parse(bare));
  }

  function checkUrl(url: string): OutboundCheck {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return { ok: false, code: 'invalid_url', reason: 'is not a URL' };
    }
    if (parsed.protocol !== 'https:' && !(allowHttp && parsed.protocol === 'http:')) {
      const allowedSchemes = allowHttp ? 'https or http' : 'https';
      return { ok: false, code: 'scheme_not_allowed', reason: `must use ${allowedSchemes}, not ${parsed.protocol.replace(/:$/, '')}` };
    }
    if (parsed.username !== '' || parsed.password !== '') {
      return { ok: false, code: 'credentials_in_url', reason: 'must not carry a user name or password; put secrets in the credential fields' };
    }
    // WHATWG URL parsing has already turned 2130706433, 0x7f.1 and friends into 127.0.0.1.
    const host = parsed.hostname;
    if (host.startsWith('[') || ipaddr.IPv4.isValidFourPartDecimal(host)) return checkAddress(host);
    if (isLocalhostName(host)) {
      const v4 = checkAddress('127.0.0.1');
      return v4.ok ? v4 : { ok: false, code: 'address_not_allowed', reason: `${host} is a loopback name, which CRM requests may not reach` };
    }
    // Other names are checked where it counts: on the resolved address at connect time.
    return { ok: true };
  }

  return { allowHttp, checkUrl, checkAddress };
}
