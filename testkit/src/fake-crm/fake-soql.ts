/**
 * The one SOQL shape the adapter sends, `SELECT a, b FROM Obj WHERE f IN ('x', 'y')`, parsed as
 * Salesforce would: string literals with SOQL's escapes, anything else refused. Strict on
 * purpose, so a badly escaped key fails the test instead of matching by luck.
 */
export interface SoqlInQuery {
  fields: string[];
  sobject: string;
  whereField: string;
  values: string[];
}

const HEAD = /^SELECT\s+([A-Za-z0-9_,\s]+?)\s+FROM\s+([A-Za-z][A-Za-z0-9_]*)\s+WHERE\s+([A-Za-z][A-Za-z0-9_]*)\s+IN\s+\(/i;
const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', b: '\b', f: '\f', '"': '"', "'": "'", '\\': '\\' };

export function parseSoqlInQuery(soql: string): SoqlInQuery | string {
  const head = HEAD.exec(soql);
  if (!head) return 'unexpected token: the fake CRM understands SELECT ... FROM ... WHERE field IN (...)';
  const fields = (head[1] ?? '').split(',').map((f) => f.trim());
  if (fields.some((f) => !/^[A-Za-z][A-Za-z0-9_]*$/.test(f))) return `invalid field list: ${head[1]}`;
  const values: string[] = [];
  let i = head[0].length;
  for (;;) {
    while (soql[i] === ' ') i++;
    if (soql[i] !== "'") return `expected a string literal at position ${i}`;
    i++;
    let value = '';
    for (;;) {
      const c = soql[i];
      if (c === undefined) return 'unterminated string literal';
      if (c === "'") break;
      if (c === '\\') {
        const escaped = ESCAPES[soql[i + 1] ?? ''];
        if (escaped === undefined) return `invalid escape sequence \\${soql[i + 1] ?? ''}`;
        value += escaped;
        i += 2;
        continue;
      }
      value += c;
      i++;
    }
    values.push(value);
    i++;
    while (soql[i] === ' ') i++;
    if (soql[i] === ',') {
      i++;
      continue;
    }
    if (soql[i] === ')' && soql.slice(i + 1).trim() === '') break;
    return `unexpected token at position ${i}`;
  }
  return { fields, sobject: head[2] ?? '', whereField: head[3] ?? '', values };
}
