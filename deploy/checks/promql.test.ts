import { describe, expect, it } from 'vitest';
import { parseQuery, selectors } from './promql.js';

const names = (expr: string) => selectors(expr).map((s) => s.metric);

describe('selectors', () => {
  it('finds metric names, not functions, aggregations, keywords or label lists', () => {
    expect(names('sum by (job) (rate(a_total{x="1"}[5m])) / ignoring(x) group_left(y) sum without (z) (b_total) > bool 0')).toEqual(['a_total', 'b_total']);
    expect(names('topk(5, c) or on() vector(0) unless d offset 10m and absent(e{job="gateway"})')).toEqual(['c', 'd', 'e']);
    expect(names('histogram_quantile(0.99, sum(rate(h_bucket[$__rate_interval])) by (le))')).toEqual(['h_bucket']);
    expect(names('max_over_time(rate(f_total[5m])[1h:1m]) @ start() + count_values("v", g)')).toEqual(['f_total', 'g']);
  });

  it('ignores what is inside strings, comments and numbers', () => {
    expect(names('label_replace(m, "dst", "$1 not_a_metric", "src", "(.*)") # comment_metric\n * 1e3 + 1h30m')).toEqual(['m']);
    expect(names('n{route=~"/v1/events|other{x}", code!="a,b"}')).toEqual(['n']);
  });

  it('reads the label names of matchers, and {__name__="x"} selectors', () => {
    expect(selectors('a{status_code=~"5..", route!="/x"} + {__name__="b", job="g"}')).toEqual([
      { metric: 'a', labels: ['status_code', 'route'] },
      { metric: 'b', labels: ['job'] },
    ]);
  });

  it('lists the grouping labels', () => {
    expect(parseQuery('sum by (a, b) (x) / on(c) group_left(d) y').groupingLabels).toEqual(['a', 'b', 'c', 'd']);
  });

  it('refuses what it cannot read instead of passing it', () => {
    expect(() => selectors('a{job="x"')).toThrow(/unbalanced/);
    expect(() => selectors('a{job=x}')).toThrow(/cannot read label matchers/);
    expect(() => selectors('a{job="x}')).toThrow(/unterminated string|unbalanced/);
  });
});
