import { describe, expect, it } from 'vitest';
import { UploadSlots } from './upload-slots.js';

describe('UploadSlots', () => {
  it('refuses the upload past the per-account limit, then admits one once a slot is given back', () => {
    const slots = new UploadSlots({ perAccount: 2, perAddress: 10 });
    const a = slots.acquire('acc_a', '10.0.0.1');
    const b = slots.acquire('acc_a', '10.0.0.2');
    expect(slots.acquire('acc_a', '10.0.0.3')).toEqual({ refused: 'account' });
    expect('release' in slots.acquire('acc_b', '10.0.0.3')).toBe(true);
    if (!('release' in a) || !('release' in b)) throw new Error('expected slots');
    a.release();
    a.release(); // idempotent: a second release frees nothing more
    expect('release' in slots.acquire('acc_a', '10.0.0.4')).toBe(true);
    expect(slots.acquire('acc_a', '10.0.0.5')).toEqual({ refused: 'account' });
    expect(slots.open()).toBe(3);
  });

  it('refuses the upload past the per-address limit, whichever accounts share the address', () => {
    const slots = new UploadSlots({ perAccount: 10, perAddress: 2 });
    slots.acquire('acc_a', '10.0.0.1');
    slots.acquire('acc_b', '10.0.0.1');
    expect(slots.acquire('acc_c', '10.0.0.1')).toEqual({ refused: 'address' });
    expect('release' in slots.acquire('acc_c', '10.0.0.2')).toBe(true);
  });
});
