import { describe, expect, it } from 'vitest';
import { locatePointer } from './json-locate.js';
import { lineDiff } from './line-diff.js';

describe('lineDiff', () => {
  it('keeps common lines and marks removed and added ones', () => {
    expect(lineDiff('a\nb\nc', 'a\nx\nc\nd')).toEqual([
      { kind: 'same', text: 'a' },
      { kind: 'removed', text: 'b' },
      { kind: 'added', text: 'x' },
      { kind: 'same', text: 'c' },
      { kind: 'added', text: 'd' },
    ]);
  });
  it('is all same for equal texts', () => {
    expect(lineDiff('a\nb', 'a\nb').every((l) => l.kind === 'same')).toBe(true);
  });
});

describe('locatePointer', () => {
  const text = '{\n  "version": 1,\n  "rules": [\n    { "id": "a", "actions": [{ "op": "sett" }] }\n  ]\n}';
  it('finds the value at a pointer', () => {
    const span = locatePointer(text, '/rules/0/actions/0/op');
    expect(span && text.slice(span.start, span.end)).toBe('"sett"');
    const root = locatePointer(text, '/');
    expect(root && text.slice(root.start, root.end)).toBe(text);
  });
  it('falls back to the closest value for a missing property, and to undefined for text that is not JSON', () => {
    const span = locatePointer(text, '/rules/0/object');
    expect(span && text.slice(span.start, span.end)).toBe('{ "id": "a", "actions": [{ "op": "sett" }] }');
    expect(locatePointer('{ "a": ', '/a')).toBeUndefined();
  });
  it('unescapes ~1 and ~0', () => {
    const span = locatePointer('{"a/b": {"c~d": 5}}', '/a~1b/c~0d');
    expect(span).toEqual({ start: 16, end: 17 });
  });
});
