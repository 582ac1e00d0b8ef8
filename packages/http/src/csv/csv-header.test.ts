import { describe, expect, it } from 'vitest';
import { CsvCellReader } from './csv-cells.js';
import { countFields } from './csv-header.js';

describe('countFields', () => {
  it.each([
    ['a,b,c', 3],
    [',,', 3],
    ['"a,b",c', 2],
    ['"say ""hi"", ok",x', 2],
    [' "quoted, after spaces" ,y', 2],
  ])('counts the fields of %j as fast-csv splits them', async (record, expected) => {
    expect(countFields(Buffer.from(record))).toBe(expected);
    const reader = new CsvCellReader();
    const cells = await reader.read(Buffer.from(record));
    reader.close();
    expect(cells.ok && cells.cells.length).toBe(expected);
  });

  it('never counts more fields than fast-csv when a quote stands inside an unquoted field', async () => {
    let compared = 0;
    for (const record of ['ab"c,d,e', 'a"b,c"d,e', 'x,y"z,w']) {
      const reader = new CsvCellReader();
      const cells = await reader.read(Buffer.from(record));
      reader.close();
      if (!cells.ok) continue; // malformed: the file fails anyway
      compared += 1;
      expect(countFields(Buffer.from(record))).toBeLessThanOrEqual(cells.cells.length);
    }
    expect(compared).toBeGreaterThan(0);
  });
});
