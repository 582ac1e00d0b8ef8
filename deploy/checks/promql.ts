/**
 * The series selectors of a PromQL expression: which metric names it reads and which label
 * names its matchers use. A small tokenizer rather than a full parser (no dependency for it):
 * promtool checks the syntax of the same expressions (deploy/checks/check.sh), this only has to
 * tell metric names from functions, keywords, label lists, durations and strings.
 */
export interface Selector {
  metric: string;
  /** Label names used in the selector's matchers, e.g. `status_code` in {status_code=~"5.."}. */
  labels: string[];
}

/** Functions and aggregation operators: an identifier followed by `(` is never a metric. */
const AGGREGATIONS = new Set([
  'sum',
  'min',
  'max',
  'avg',
  'group',
  'stddev',
  'stdvar',
  'count',
  'count_values',
  'bottomk',
  'topk',
  'quantile',
  'limitk',
  'limit_ratio',
]);
/** Keywords followed by a parenthesised list of label names. */
const LABEL_LISTS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
const KEYWORDS = new Set(['and', 'or', 'unless', 'bool', 'offset', 'atan2', 'inf', 'nan']);

/** Grafana's interval variables ($__rate_interval, ${__interval}, ...) and others: a duration. */
export function withoutGrafanaVariables(expr: string): string {
  return expr.replace(/\$\{[^}]*\}|\$\w+/g, '5m');
}

export interface ParsedQuery {
  selectors: Selector[];
  /** Label names of every `by (...)`, `without (...)`, `on (...)`, `ignoring (...)`, `group_left (...)`. */
  groupingLabels: string[];
}

export function selectors(expression: string): Selector[] {
  return parseQuery(expression).selectors;
}

export function parseQuery(expression: string): ParsedQuery {
  const expr = withoutGrafanaVariables(expression);
  const found: Selector[] = [];
  const grouping: string[] = [];
  let i = 0;

  const skipSpace = () => {
    while (i < expr.length) {
      if (/\s/.test(expr.charAt(i))) i++;
      else if (expr[i] === '#') while (i < expr.length && expr[i] !== '\n') i++;
      else break;
    }
  };
  /** From an opening quote to past its closing quote. */
  const skipString = () => {
    const quote = expr[i];
    i++;
    while (i < expr.length && expr[i] !== quote) i += expr[i] === '\\' && quote !== '`' ? 2 : 1;
    if (i >= expr.length) throw new Error(`unterminated string in: ${expression}`);
    i++;
  };
  /** From `open` to past its matching `close`, skipping strings; returns the text inside. */
  const block = (open: string, close: string): string => {
    const start = i + 1;
    let depth = 0;
    while (i < expr.length) {
      const c = expr[i];
      if (c === '"' || c === "'" || c === '`') {
        skipString();
        continue;
      }
      if (c === open) depth++;
      if (c === close && --depth === 0) {
        i++;
        return expr.slice(start, i - 1);
      }
      i++;
    }
    throw new Error(`unbalanced ${open}${close} in: ${expression}`);
  };

  while (i < expr.length) {
    skipSpace();
    if (i >= expr.length) break;
    const c = expr.charAt(i);
    if (c === '"' || c === "'" || c === '`') {
      skipString();
    } else if (c === '{') {
      // A selector without a metric name before it: {__name__="x"} names it in a matcher.
      const labels = matcherLabels(block('{', '}'), expression);
      const name = /__name__\s*=\s*"([^"]+)"/.exec(labels.raw)?.[1];
      if (name) found.push({ metric: name, labels: labels.names.filter((l) => l !== '__name__') });
    } else if (c === '[') {
      block('[', ']'); // range or subquery: durations only (a subquery's inner expression aside)
    } else if (/[0-9.]/.test(c)) {
      // Numbers and durations (5m, 1h30m, 1e3, 0x1f, 1.5e-3).
      const m = /^(0x[0-9a-fA-F]+|[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?(?:ms|[smhdwy])?(?:[0-9]+(?:ms|[smhdwy]))*)/.exec(expr.slice(i));
      i += m?.[0].length || 1;
    } else if (/[a-zA-Z_:]/.test(c)) {
      const ident = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(expr.slice(i))?.[0] ?? c;
      i += ident.length;
      skipSpace();
      const next = expr[i];
      if (LABEL_LISTS.has(ident)) {
        if (next === '(') {
          grouping.push(
            ...block('(', ')')
              .split(',')
              .map((l) => l.trim())
              .filter(Boolean),
          );
        }
      } else if (KEYWORDS.has(ident)) {
        // operators and literals
      } else if (next === '(' || (AGGREGATIONS.has(ident) && /^(by|without)\b/.test(expr.slice(i)))) {
        // a function call or `sum by (x) (...)`
      } else {
        const labels = next === '{' ? matcherLabels(block('{', '}'), expression).names : [];
        found.push({ metric: ident, labels });
      }
    } else {
      i++; // operators, parentheses, commas, @
    }
  }
  return { selectors: found, groupingLabels: grouping };
}

/** The label names of `a="x", b=~"y"` (the text between a selector's braces). */
function matcherLabels(inner: string, expression: string): { names: string[]; raw: string } {
  const names: string[] = [];
  const matcher = /\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)\s*(,|$)/y;
  let pos = 0;
  while (pos < inner.length && inner.slice(pos).trim() !== '') {
    matcher.lastIndex = pos;
    const m = matcher.exec(inner);
    if (!m?.[1]) throw new Error(`cannot read label matchers {${inner}} in: ${expression}`);
    names.push(m[1]);
    pos = matcher.lastIndex;
  }
  return { names, raw: inner };
}
