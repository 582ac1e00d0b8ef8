/**
 * The dashboards and alert rules read only metrics the services really export, with labels
 * those metrics have; every alert is complete (severity, summary, description, a runbook
 * section that exists); Grafana loads every dashboard file and each one queries the
 * provisioned Prometheus datasource. No servers: the metric catalogue is read from the sources.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { METRIC_NAMES, REPO_ROOT } from '@ingest/platform';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { alertRules, allPanels, checkQueries, dashboardQueries, provisionedDashboardFiles, readDashboard, ruleQueries } from './deploy-files.js';
import { definitionsIn, type ExportedSeries, exportedSeries, serviceMetricDefinitions } from './metric-catalogue.js';

let exported: Map<string, ExportedSeries>;
beforeAll(async () => {
  exported = await exportedSeries();
});

describe('metric catalogue', () => {
  it('finds where every METRIC_NAMES entry is created, with its type and labels', () => {
    const defined = new Set(serviceMetricDefinitions().map((d) => d.key));
    expect(Object.keys(METRIC_NAMES).filter((k) => !defined.has(k as keyof typeof METRIC_NAMES))).toEqual([]);
    expect(exported.get('ingest_http_requests_total')).toMatchObject({ type: 'counter' });
    expect([...(exported.get('ingest_http_requests_total')?.labels ?? [])].sort()).toEqual(['instance', 'job', 'method', 'route', 'service', 'status_code']);
    expect(exported.get('ingest_http_request_duration_seconds_bucket')?.labels?.has('le')).toBe(true);
    expect([...(exported.get('ingest_consumer_lag_messages')?.labels ?? [])]).toEqual(expect.arrayContaining(['group', 'topic', 'partition']));
    expect(exported.get('ingest_rate_limit_refusals_total')?.type).toBe('counter');
  });

  it('knows the prom-client default metrics and up, and no histogram suffix on counters', () => {
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds_bucket',
      'up',
    ]) {
      expect(exported.has(name), name).toBe(true);
    }
    expect(exported.has('ingest_http_requests_total_bucket')).toBe(false);
    expect(exported.has('ingest_consumer_lag_messages_count')).toBe(false);
  });

  it('reads generics, sharedCounter and labels listed after help', () => {
    const source = `
      const g = new Gauge<L>({
        name: METRIC_NAMES.consumerLag,
        help: 'x',
        labelNames: ['group', "topic"],
      });
      const c = sharedCounter(deps.metrics, { name: METRIC_NAMES.deadLetters, help: 'y', labelNames: ['consumer', 'code'] });
      const h = new Histogram({ name: METRIC_NAMES.jobDuration, help: 'z', buckets: [1, 2] });
      const other = new Counter({ name: 'not_ours', help: 'w' });`;
    expect(definitionsIn(source, 'x.ts').map(({ key, type, labelNames }) => ({ key, type, labelNames }))).toEqual([
      { key: 'consumerLag', type: 'gauge', labelNames: ['group', 'topic'] },
      { key: 'deadLetters', type: 'counter', labelNames: ['consumer', 'code'] },
      { key: 'jobDuration', type: 'histogram', labelNames: [] },
    ]);
    expect(() => definitionsIn('new Counter({ name: METRIC_NAMES.noSuchMetric })', 'y.ts')).toThrow(/noSuchMetric does not exist/);
  });
});

describe('checkQueries', () => {
  const check = (expr: string) => checkQueries([{ where: 'test', expr }], exported);

  it('accepts exported metrics, histogram series, defaults, up and their labels', () => {
    expect(
      check('histogram_quantile(0.99, sum by (route, le) (rate(ingest_http_request_duration_seconds_bucket{route="/v1/events"}[$__rate_interval])))'),
    ).toEqual([]);
    expect(check('sum by (job) (up{job=~"gateway|processor"}) + on(job) group_left process_resident_memory_bytes{job="gateway"}')).toEqual([]);
  });

  it('fails a metric no service exports, a misspelt one, or a histogram suffix on a counter', () => {
    expect(check('rate(ingest_crm_no_such_metric_total[5m])')).toEqual(['test: ingest_crm_no_such_metric_total is not exported by any service']);
    expect(check('sum(rate(ingest_events_accept_total[5m]))')).toEqual(['test: ingest_events_accept_total is not exported by any service']);
    expect(check('ingest_dead_letters_total_bucket')).toHaveLength(1);
  });

  it('fails a label the metric does not have (such a selector matches nothing, silently)', () => {
    expect(check('rate(ingest_http_requests_total{status=~"5.."}[5m])')).toEqual([
      'test: ingest_http_requests_total has no label "status" (it has instance, job, method, route, service, status_code)',
    ]);
  });

  it('fails a grouping label that no metric of the query has', () => {
    expect(check('sum by (rout) (rate(ingest_http_requests_total[5m]))')).toEqual(['test: no metric of the query has the label "rout" it groups by']);
    expect(check('sum by (group, topic) (max by (group, topic, partition) (ingest_consumer_lag_messages))')).toEqual([]);
  });

  it('fails a query that reads no metric at all', () => {
    expect(check('vector(1)')).toEqual(['test: reads no metric: vector(1)']);
  });
});

describe('alert rules (deploy/prometheus/alerts.yml)', () => {
  const rules = alertRules();
  const runbook = readFileSync(join(REPO_ROOT, 'docs/runbook.md'), 'utf8');
  // GitHub's heading anchors: lower case, punctuation dropped, spaces to dashes.
  const anchors = new Set(
    [...runbook.matchAll(/^#{1,6}\s+(.+)$/gm)].map((m) =>
      (m[1] ?? '')
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    ),
  );

  it('read only exported metrics, with labels they have', () => {
    expect(rules.length).toBeGreaterThanOrEqual(7);
    expect(checkQueries(ruleQueries(rules), exported)).toEqual([]);
  });

  it('each have a severity, a summary, a description and a runbook section that exists', () => {
    for (const r of rules.filter((x) => x.alert)) {
      expect(['critical', 'warning'], r.alert).toContain(r.labels?.severity);
      expect(r.annotations?.summary, r.alert).toBeTruthy();
      expect(r.annotations?.description, r.alert).toBeTruthy();
      const [path, anchor = ''] = (r.annotations?.runbook_url ?? '').split('#');
      expect(path, r.alert).toBe('docs/runbook.md');
      expect(anchors.has(anchor), `${r.alert}: docs/runbook.md has no section #${anchor}`).toBe(true);
    }
  });

  it('are each covered by the promtool unit tests, firing and not firing', () => {
    const tests = parseYamlTests();
    for (const r of rules.filter((x) => x.alert)) {
      const cases = tests.filter((t) => t.alertname === r.alert);
      expect(
        cases.some((t) => t.firing),
        `${r.alert} is never tested firing`,
      ).toBe(true);
      expect(
        cases.some((t) => !t.firing),
        `${r.alert} is never tested not firing`,
      ).toBe(true);
    }
  });
});

function parseYamlTests(): { alertname: string; firing: boolean }[] {
  const text = readFileSync(join(REPO_ROOT, 'deploy/prometheus/tests/alerts.test.yml'), 'utf8');
  const doc = parseYaml(text) as { tests: { alert_rule_test?: { alertname: string; exp_alerts?: unknown[] }[] }[] };
  return doc.tests.flatMap((t) => (t.alert_rule_test ?? []).map((a) => ({ alertname: a.alertname, firing: (a.exp_alerts ?? []).length > 0 })));
}

describe('Grafana dashboards', () => {
  const files = provisionedDashboardFiles();

  it('are the four the docs name, all loaded by the compose file provider', () => {
    expect(files.map((f) => f.split('/').pop())).toEqual(['crm-sync.json', 'gateway.json', 'overview.json', 'pipeline.json']);
  });

  it('query only exported metrics, with labels they have', () => {
    const queries = files.flatMap((f) => dashboardQueries(readDashboard(f), f));
    expect(queries.length).toBeGreaterThan(40);
    expect(checkQueries(queries, exported)).toEqual([]);
  });

  it('have unique uids and panel ids, and use the provisioned datasource (uid prometheus)', () => {
    const provisioned = readFileSync(join(REPO_ROOT, 'deploy/grafana/provisioning/datasources/prometheus.yml'), 'utf8');
    expect(provisioned).toMatch(/uid: prometheus\b/);
    const dashboards = files.map(readDashboard);
    expect(new Set(dashboards.map((d) => d.uid)).size).toBe(files.length);
    for (const d of dashboards) {
      const panels = allPanels(d);
      expect(new Set(panels.map((p) => p.id)).size, d.uid).toBe(panels.length);
      for (const p of panels.filter((x) => x.targets?.length)) {
        expect(p.datasource, `${d.uid} ${p.title}`).toEqual({ type: 'prometheus', uid: 'prometheus' });
        for (const t of p.targets ?? []) expect(t.datasource ?? p.datasource).toEqual({ type: 'prometheus', uid: 'prometheus' });
      }
    }
  });

  it('CRM sync queries the crm-sink’s calls, outcomes, lag and dead letters', () => {
    const crm = readDashboard(files.find((f) => f.endsWith('crm-sync.json')) ?? '');
    const exprs = allPanels(crm).flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    for (const metric of ['ingest_crm_calls_total', 'ingest_crm_sync_outcomes_total', 'ingest_crm_sync_lag_seconds_bucket', 'ingest_dead_letters_total']) {
      expect(
        exprs.some((e) => e?.includes(metric)),
        metric,
      ).toBe(true);
    }
  });

  it('show accept -> stored and accept -> synced at p50 and p99, and accepted, rejected and deduplicated in one panel', () => {
    const exprsOf = (name: string) => {
      const dashboard = readDashboard(files.find((f) => f.endsWith(`${name}.json`)) ?? '');
      return allPanels(dashboard).map((p) => (p.targets ?? []).map((t) => t.expr ?? ''));
    };
    const quantiles = (panels: string[][], metric: string) =>
      new Set(panels.flat().flatMap((e) => (e.includes(`${metric}_bucket`) ? [/histogram_quantile\((0\.\d+)/.exec(e)?.[1]] : [])));
    for (const name of ['pipeline', 'overview']) {
      expect(quantiles(exprsOf(name), 'ingest_event_stored_latency_seconds'), name).toEqual(new Set(['0.5', '0.99']));
    }
    for (const name of ['crm-sync', 'overview']) {
      expect([...quantiles(exprsOf(name), 'ingest_crm_sync_lag_seconds')], name).toEqual(expect.arrayContaining(['0.5', '0.99']));
    }
    for (const name of ['pipeline', 'overview']) {
      const sideBySide = exprsOf(name).some((panel) =>
        ['ingest_events_accepted_total', 'ingest_events_rejected_total', 'ingest_dedupe_hits_total'].every((m) => panel.some((e) => e.includes(m))),
      );
      expect(sideBySide, name).toBe(true);
    }
    const pipeline = exprsOf('pipeline').flat();
    for (const metric of [
      'ingest_consumer_messages_total',
      'ingest_consumer_batch_failures_total',
      'ingest_consumer_batch_duration_seconds_bucket',
      'ingest_usage_reconcile_runs_total',
      'ingest_usage_reconciled_accounts_total',
      'ingest_usage_reconcile_last_success_timestamp_seconds',
    ]) {
      expect(
        pipeline.some((e) => e.includes(metric)),
        metric,
      ).toBe(true);
    }
    expect(
      exprsOf('gateway')
        .flat()
        .some((e) => e.includes('ingest_control_plane_records')),
    ).toBe(true);
  });

  it('fails a dashboard that queries a metric nobody exports (also inside a collapsed row and in a variable)', () => {
    const bad = {
      uid: 'x',
      title: 'x',
      panels: [
        {
          type: 'row',
          title: 'r',
          panels: [{ type: 'timeseries', title: 'CRM calls', targets: [{ refId: 'A', expr: 'rate(ingest_crm_no_such_metric_total[5m])' }] }],
        },
      ],
      templating: { list: [{ name: 'route', type: 'query', query: { query: 'label_values(ingest_http_requests_totl, route)' } }] },
    };
    expect(checkQueries(dashboardQueries(bad, join(REPO_ROOT, 'bad.json')), exported)).toEqual([
      'bad.json: panel "CRM calls" (A): ingest_crm_no_such_metric_total is not exported by any service',
      'bad.json: variable $route: ingest_http_requests_totl is not exported by any service',
    ]);
  });
});
