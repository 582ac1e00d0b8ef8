import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeMarks, encodeMarks, type Mark } from './changelog-marks.js';
import { fingerprint } from './dedupe-window.js';

describe('changelog marks', () => {
  it('round-trip in messages of at most 2,000 marks, on the source partition', () => {
    const marks: Mark[] = Array.from({ length: 4_500 }, (_, i) => [fingerprint('acc_1', `e${i}`), 1_764_000_000_000 + i]);
    const messages = encodeMarks(marks, 7, '1234');
    expect(messages.map((m) => m.partition)).toEqual([7, 7, 7]);
    expect(messages.map((m) => m.key)).toEqual(['7:1234:0', '7:1234:2000', '7:1234:4000']);
    expect(messages[0]?.value).toHaveLength(1 + 2_000 * 24);
    const decoded = messages.flatMap((m) => decodeMarks(Buffer.from(m.value)));
    expect(decoded).toEqual(marks);
  });

  it('writes and reads the MD5 digest bytes that earlier releases wrote (format 2 is unchanged)', () => {
    const digest = createHash('md5').update('acc_1:e1').digest();
    const [message] = encodeMarks([[fingerprint('acc_1', 'e1'), 5]], 0, '0');
    expect(Buffer.from(message?.value as Buffer).subarray(1, 17)).toEqual(digest);
    // A mark as an earlier release wrote it (digest copied from a Buffer), read back as today's fingerprint.
    const earlier = Buffer.alloc(25);
    earlier[0] = 2;
    digest.copy(earlier, 1);
    earlier.writeDoubleLE(5, 17);
    expect(decodeMarks(earlier)).toEqual([[fingerprint('acc_1', 'e1'), 5]]);
  });

  it('still reads the JSON format an older processor wrote, keys as fingerprints', () => {
    const v1 = Buffer.from('{"v":1,"marks":[["acc_1:e1",5],[2,3],["x","y"]]}');
    const decoded = decodeMarks(v1);
    expect(decoded).toHaveLength(1);
    expect(decoded[0]?.[0]).toBe(fingerprint('acc_1', 'e1'));
    expect(decoded[0]?.[1]).toBe(5);
  });

  it('ignores what it cannot read', () => {
    expect(decodeMarks(null)).toEqual([]);
    expect(decodeMarks(Buffer.from('not json'))).toEqual([]);
    expect(decodeMarks(Buffer.from('{"v":3,"marks":[["k",1]]}'))).toEqual([]);
    expect(decodeMarks(Buffer.from([2, 1, 2, 3]))).toEqual([]); // truncated binary
  });

  it('writes nothing for no marks', () => {
    expect(encodeMarks([], 0, '0')).toEqual([]);
  });
});
