import { describe, expect, it } from 'vitest';
import { createOutboundPolicy } from './outbound-policy.js';

const strict = createOutboundPolicy();

describe('outbound address policy: addresses', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['10.1.2.3', 'private (RFC 1918)'],
    ['172.16.0.1', 'private (RFC 1918)'],
    ['172.31.255.255', 'private (RFC 1918)'],
    ['192.168.1.1', 'private (RFC 1918)'],
    ['fd12:3456::1', 'unique-local'],
    ['fc00::1', 'unique-local'],
    ['169.254.169.254', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.254', 'carrier-grade NAT'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:10.0.0.1', 'private (RFC 1918)'],
    ['::ffff:0:10.0.0.1', 'private (RFC 1918)'],
    ['::10.0.0.1', 'private (RFC 1918)'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['2002:7f00:1::', '6to4'],
    ['192.0.2.10', 'reserved'],
  ])('refuses %s (%s)', (address, kind) => {
    const check = strict.checkAddress(address);
    expect(check.ok).toBe(false);
    if (!check.ok) {
      expect(check.code).toBe('address_not_allowed');
      expect(check.reason).toContain(kind);
    }
  });

  it.each(['93.184.215.14', '8.8.8.8', '2606:4700::6810:84e5', '::ffff:8.8.8.8', '64:ff9b::808:808', '172.32.0.1', '100.128.0.1'])(
    'allows the public address %s',
    (address) => {
      expect(strict.checkAddress(address)).toEqual({ ok: true });
    },
  );

  it('lets an operator allowlist reach what the policy refuses, and nothing more', () => {
    const local = createOutboundPolicy({ allowedCidrs: '127.0.0.1/32, 10.9.0.0/16 ,fd00::/8' });
    expect(local.checkAddress('127.0.0.1').ok).toBe(true);
    expect(local.checkAddress('::ffff:127.0.0.1').ok).toBe(true);
    expect(local.checkAddress('10.9.200.1').ok).toBe(true);
    expect(local.checkAddress('fd00::5').ok).toBe(true);
    expect(local.checkAddress('127.0.0.2').ok).toBe(false);
    expect(local.checkAddress('10.8.0.1').ok).toBe(false);
    expect(local.checkAddress('169.254.169.254').ok).toBe(false);
  });

  it('refuses a malformed allowlist naming the setting', () => {
    expect(() => createOutboundPolicy({ allowedCidrs: '127.0.0.1/32,not-an-address' })).toThrow(/CRM_ALLOWED_CIDRS/);
  });

  it('refuses what is not an address', () => {
    expect(strict.checkAddress('example.com').ok).toBe(false);
  });
});

describe('outbound address policy: URLs as stored', () => {
  it('takes https URLs with public or not-yet-resolved names', () => {
    expect(strict.checkUrl('https://api.hubapi.com')).toEqual({ ok: true });
    expect(strict.checkUrl('https://hooks.example.com:8443/in?x=1')).toEqual({ ok: true });
    expect(strict.checkUrl('https://93.184.215.14/hook')).toEqual({ ok: true });
  });

  it('refuses plain http unless the operator allows it', () => {
    expect(strict.checkUrl('http://hooks.example.com/in')).toMatchObject({ ok: false, code: 'scheme_not_allowed', reason: 'must use https, not http' });
    expect(createOutboundPolicy({ allowHttp: true }).checkUrl('http://hooks.example.com/in')).toEqual({ ok: true });
    expect(createOutboundPolicy({ allowHttp: true }).checkUrl('ftp://hooks.example.com/in')).toMatchObject({ code: 'scheme_not_allowed' });
  });

  it.each([
    'https://169.254.169.254/latest/meta-data/',
    'https://127.0.0.1:3102/metrics',
    'https://2130706433/',
    'https://0x7f.1/',
    'https://[::1]/',
    'https://[::ffff:a9fe:a9fe]/',
    'https://10.0.0.5/hook',
    'https://localhost/hook',
    'https://api.localhost./hook',
    'https://[fe80::1]/',
  ])('refuses %s when it is stored', (url) => {
    expect(strict.checkUrl(url)).toMatchObject({ ok: false, code: 'address_not_allowed' });
  });

  it('refuses user:password@ and what is not a URL', () => {
    expect(strict.checkUrl('https://user:pw@hooks.example.com/')).toMatchObject({ ok: false, code: 'credentials_in_url' });
    expect(strict.checkUrl('not a url')).toMatchObject({ ok: false, code: 'invalid_url' });
  });

  it('lets localhost through only when loopback is allowlisted', () => {
    const local = createOutboundPolicy({ allowHttp: true, allowedCidrs: ['127.0.0.0/8'] });
    expect(local.checkUrl('http://127.0.0.1:4000/webhook/a')).toEqual({ ok: true });
    expect(local.checkUrl('http://localhost:4000/webhook/a')).toEqual({ ok: true });
    expect(local.checkUrl('http://169.254.169.254/')).toMatchObject({ ok: false });
  });
});
