/**
 * Where the value at a JSON Pointer (RFC 6901) starts and ends in a JSON text, so an error the
 * server reports for `/rules/0/actions/1/op` can be selected in the editor. Walks the text
 * with a small scanner instead of JSON.parse, which forgets positions. Returns undefined when
 * the text is not JSON or the pointer leads nowhere (a missing property: its parent is used).
 */
export function locatePointer(text: string, pointer: string): { start: number; end: number } | undefined {
  const tokens =
    pointer === '' || pointer === '/'
      ? []
      : pointer
          .slice(1)
          .split('/')
          .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'));
  let pos = 0;
  const ws = () => {
    while (pos < text.length && /\s/.test(text.charAt(pos))) pos++;
  };
  const fail = (): never => {
    throw new Error('not json');
  };
  const skipString = (): string => {
    const start = pos;
    if (text[pos] !== '"') fail();
    pos++;
    while (pos < text.length && text[pos] !== '"') pos += text[pos] === '\\' ? 2 : 1;
    if (pos >= text.length) fail();
    pos++;
    return JSON.parse(text.slice(start, pos)) as string;
  };
  // Skips one value; when `path` is not empty, returns the span of the value at that path inside it.
  const value = (path: string[]): { start: number; end: number } | undefined => {
    ws();
    const start = pos;
    const c = text[pos];
    let found: { start: number; end: number } | undefined;
    if (c === '{' || c === '[') {
      pos++;
      let index = 0;
      ws();
      if (text[pos] === (c === '{' ? '}' : ']')) pos++;
      else {
        for (;;) {
          ws();
          let key = String(index);
          if (c === '{') {
            key = skipString();
            ws();
            if (text[pos] !== ':') fail();
            pos++;
          }
          const here = path.length > 0 && path[0] === key;
          const inner = value(here ? path.slice(1) : []);
          if (here) found = inner;
          index++;
          ws();
          if (text[pos] === ',') pos++;
          else if (text[pos] === (c === '{' ? '}' : ']')) {
            pos++;
            break;
          } else fail();
        }
      }
    } else if (c === '"') skipString();
    else {
      const m = /^(true|false|null|-?\d+(\.\d+)?([eE][+-]?\d+)?)/.exec(text.slice(pos));
      if (!m) return fail();
      pos += m[0].length;
    }
    if (path.length === 0) return { start, end: pos };
    // The pointer goes deeper than the text (e.g. a required property is missing): the closest value.
    return found ?? { start, end: pos };
  };
  try {
    return value(tokens);
  } catch {
    return undefined;
  }
}
