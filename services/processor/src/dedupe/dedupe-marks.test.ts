import { describe, expect, it } from 'vitest';
import { decodeMarks, encodeMarks } from './dedupe.consumer.js';

describe('changelog marks', () => {
  it('round-trip in messages of at most 2,000 marks, on the source partition', () => {
    const marks = Array.from({ length: 4_500 }, (_, i) => [`acc_1:e${i}`, i] as [string, number]);
    const messages = encodeMarks(marks, 7, '1234');
    expect(messages.map((m) => m.partition)).toEqual([7, 7, 7]);
    expect(messages.map((m) => m.key)).toEqual(['7:1234:0', '7:1234:2000', '7:1234:4000']);
    expect(messages.flatMap((m) => decodeMarks(Buffer.from(m.value)))).toEqual(marks);
  });

  it('ignores what it cannot read', () => {
    expect(decodeMarks(null)).toEqual([]);
    expect(decodeMarks(Buffer.from('not json'))).toEqual([]);
    expect(decodeMarks(Buffer.from('{"v":2,"marks":[["k",1]]}'))).toEqual([]);
    expect(decodeMarks(Buffer.from('{"v":1,"marks":[["k",1],[2,3],["x","y"]]}'))).toEqual([['k', 1]]);
  });

  it('writes nothing for no marks', () => {
    expect(encodeMarks([], 0, '0')).toEqual([]);
  });
});
