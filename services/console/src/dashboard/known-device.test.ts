import { describe, expect, it } from 'vitest';
import { createKnownDevices } from './known-device.js';

const key = (b: number) => Buffer.alloc(32, b);

describe('known-device cookies', () => {
  it("name the owner they were issued for, and keep the browser's device id", () => {
    const devices = createKnownDevices([key(1)]);
    const cookie = devices.issue('own_a');
    const id = devices.deviceOf(cookie, 'own_a');
    expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(devices.deviceOf(cookie, 'own_b')).toBeUndefined();
    expect(devices.deviceOf(devices.issue('own_a', id), 'own_a')).toBe(id);
  });

  it('refuse a changed, foreign, malformed or oversized cookie', () => {
    const devices = createKnownDevices([key(1)]);
    const cookie = devices.issue('own_a');
    const [v, owner, id, mac] = cookie.split('.');
    expect(devices.deviceOf(`${v}.${owner}.${id}x.${mac}`, 'own_a')).toBeUndefined();
    expect(devices.deviceOf(createKnownDevices([key(2)]).issue('own_a'), 'own_a')).toBeUndefined();
    for (const bad of [undefined, '', 'v1.own_a', 'v2.own_a.x.y', `${cookie}.extra`, 'x'.repeat(300)]) expect(devices.deviceOf(bad, 'own_a')).toBeUndefined();
  });

  it('refuse a MAC whose text differs in the unused bits of its last character (decodes to the same bytes)', () => {
    const devices = createKnownDevices([key(1)]);
    const cookie = devices.issue('own_a');
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(cookie.slice(-1));
    // A 32-byte MAC is 43 characters: the last holds 4 bits and 2 unused ones.
    const sibling = alphabet[last ^ 1] ?? '';
    const changed = cookie.slice(0, -1) + sibling;
    expect(Buffer.from(changed.split('.')[3] ?? '', 'base64url')).toEqual(Buffer.from(cookie.split('.')[3] ?? '', 'base64url'));
    expect(devices.deviceOf(changed, 'own_a')).toBeUndefined();
  });

  it('verify with every configured key and sign with the first (rotation)', () => {
    const old = createKnownDevices([key(1)]).issue('own_a');
    const rotated = createKnownDevices([key(2), key(1)]);
    expect(rotated.deviceOf(old, 'own_a')).toBeDefined();
    expect(createKnownDevices([key(2)]).deviceOf(rotated.issue('own_a'), 'own_a')).toBeDefined();
  });
});
