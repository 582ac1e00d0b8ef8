/**
 * Reads the monitoring files of deploy/ the way Prometheus and Grafana do: the alert rules, and
 * the dashboards Grafana provisions (found through docker-compose.yml's mount and the file
 * provider's path, so a dashboard that would not be loaded is not silently "checked"). Lists
 * every PromQL query with where it is, and checks them against the exported metrics.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';
import { parse } from 'yaml';
import type { ExportedSeries } from './metric-catalogue.js';
import { parseQuery } from './promql.js';

export interface Query {
  /** e.g. `deploy/grafana/.../gateway.json: panel "Requests by route" (A)`. */
  where: string;
  expr: string;
}

export interface AlertRule {
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

export const ALERTS_FILE = 'deploy/prometheus/alerts.yml';

export function alertRules(file = ALERTS_FILE, root = REPO_ROOT): AlertRule[] {
  const doc = parse(readFileSync(join(root, file), 'utf8')) as { groups: { name: string; rules: AlertRule[] }[] };
  return doc.groups.flatMap((g) => g.rules);
}

export function ruleQueries(rules: AlertRule[], file = ALERTS_FILE): Query[] {
  return rules.map((r) => ({ where: `${file}: ${r.alert ?? r.record}`, expr: r.expr }));
}

/** The dashboard JSON files Grafana loads in docker-compose: mount + provider path, resolved. */
export function provisionedDashboardFiles(root = REPO_ROOT): string[] {
  const compose = parse(readFileSync(join(root, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, { volumes?: string[] }>;
  };
  const mounts = (compose.services.grafana?.volumes ?? []).map((v) => {
    const [host = '', container = ''] = v.split(':');
    return { host: join(root, host), container };
  });
  const toHost = (containerPath: string) => {
    const mount = mounts.find((m) => containerPath === m.container || containerPath.startsWith(`${m.container}/`));
    if (!mount) throw new Error(`${containerPath} is not inside any volume docker-compose.yml mounts into grafana`);
    return join(mount.host, containerPath.slice(mount.container.length));
  };
  const providersDir = toHost('/etc/grafana/provisioning/dashboards');
  const files: string[] = [];
  for (const name of readdirSync(providersDir).filter((f) => /\.ya?ml$/.test(f))) {
    const config = parse(readFileSync(join(providersDir, name), 'utf8')) as { providers: { type: string; options: { path: string } }[] };
    for (const p of config.providers) {
      if (p.type !== 'file') continue;
      const dir = toHost(p.options.path);
      if (!existsSync(dir)) throw new Error(`dashboard provider ${name} points at ${p.options.path}, which is ${relative(root, dir)}: missing`);
      files.push(
        ...readdirSync(dir, { recursive: true, encoding: 'utf8' })
          .filter((f) => f.endsWith('.json'))
          .map((f) => join(dir, f)),
      );
    }
  }
  return files.sort();
}

export interface Panel {
  id?: number;
  type: string;
  title?: string;
  datasource?: { type?: string; uid?: string } | null;
  targets?: { refId?: string; expr?: string; datasource?: { type?: string; uid?: string } }[];
  panels?: Panel[];
}

export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating?: { list?: { name: string; type: string; query?: string | { query?: string } }[] };
}

export function readDashboard(file: string): Dashboard {
  return JSON.parse(readFileSync(file, 'utf8')) as Dashboard;
}

/** Every panel, rows' nested panels included. */
export function allPanels(dashboard: Dashboard): Panel[] {
  const walk = (panels: Panel[]): Panel[] => panels.flatMap((p) => [p, ...walk(p.panels ?? [])]);
  return walk(dashboard.panels ?? []);
}

export function dashboardQueries(dashboard: Dashboard, file: string): Query[] {
  const name = relative(REPO_ROOT, file);
  const queries: Query[] = [];
  for (const panel of allPanels(dashboard)) {
    for (const t of panel.targets ?? []) {
      if (t.expr !== undefined) queries.push({ where: `${name}: panel "${panel.title}" (${t.refId})`, expr: t.expr });
    }
  }
  for (const v of dashboard.templating?.list ?? []) {
    if (v.type !== 'query') continue;
    const q = typeof v.query === 'string' ? v.query : (v.query?.query ?? '');
    const where = `${name}: variable $${v.name}`;
    // Grafana's Prometheus variable functions; anything else cannot be checked, so it is refused.
    const fn = /^\s*(label_values|query_result|metrics|label_names)\s*\(([\s\S]*)\)\s*$/.exec(q);
    if (fn?.[1] === 'query_result') queries.push({ where, expr: fn[2] ?? '' });
    else if (fn?.[1] === 'label_values' && (fn[2] ?? '').includes(',')) queries.push({ where, expr: (fn[2] ?? '').slice(0, (fn[2] ?? '').lastIndexOf(',')) });
    else queries.push({ where, expr: `unsupported variable query: ${q}` });
  }
  return queries;
}

/** Problems with the metric and label names of these queries; empty when all are exported. */
export function checkQueries(queries: Query[], exported: ReadonlyMap<string, ExportedSeries>): string[] {
  const problems: string[] = [];
  for (const q of queries) {
    let parsed;
    try {
      parsed = parseQuery(q.expr);
    } catch (err) {
      problems.push(`${q.where}: ${(err as Error).message}`);
      continue;
    }
    if (parsed.selectors.length === 0) problems.push(`${q.where}: reads no metric: ${q.expr}`);
    const read: ExportedSeries[] = [];
    for (const s of parsed.selectors) {
      const series = exported.get(s.metric);
      if (!series) {
        problems.push(`${q.where}: ${s.metric} is not exported by any service`);
        continue;
      }
      read.push(series);
      for (const label of s.labels) {
        if (series.labels && !series.labels.has(label)) {
          problems.push(`${q.where}: ${s.metric} has no label "${label}" (it has ${[...series.labels].sort().join(', ')})`);
        }
      }
    }
    // A grouping label no metric of the query has (`sum by (rout)`) groups everything into one
    // series without a word; it must belong to at least one of them.
    for (const label of new Set(parsed.groupingLabels)) {
      if (read.length > 0 && !read.some((series) => !series.labels || series.labels.has(label))) {
        problems.push(`${q.where}: no metric of the query has the label "${label}" it groups by`);
      }
    }
  }
  return problems;
}
