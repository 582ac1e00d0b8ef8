/**
 * The shape of the repository, kept: services stand side by side on shared packages and never
 * reach into each other, and the packages are layered (platform below domain below http). The
 * test kit (`testkit/`) stands above them all: it imports the services, and only tests (and the
 * benchmark) import it. Every import of every TypeScript file is checked, tests included:
 * - a relative import stays inside its own unit (a service, a package, a tool, schemas, scripts,
 *   deploy, the test kit): so nothing imports scripts/, which is no package;
 * - an import of a workspace by name follows the layers below (tests and fixtures may also use
 *   the test kit);
 * - test helpers are named `*.fixture.ts`: in shipped units, a file only tests import must say
 *   so by name, and no shipped file imports a fixture;
 * - each service exports one entry (src/index.ts) that its own main.ts uses, no entry for tests;
 * - the workspaces' manifests agree: only the root and the benchmark depend on the test kit, and
 *   no workspace depends on itself through others.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { execFileSync } from 'node:child_process';
import { REPO_ROOT } from '@ingest/platform';
import { describe, expect, it } from 'vitest';
import { readPackage, workspaceDirs } from '../lib/workspaces.js';

/** What each unit may import of the workspaces, by package name (its own name aside). */
const LAYERS: Record<string, readonly string[] | 'any'> = {
  schemas: [],
  'packages/platform': ['@ingest/schemas'],
  'packages/domain': ['@ingest/schemas', '@ingest/platform'],
  // The HTTP layer the gateway and the console share (fastify, problem answers, uploads).
  'packages/http': ['@ingest/schemas', '@ingest/platform', '@ingest/domain'],
  'services/gateway': ['@ingest/schemas', '@ingest/platform', '@ingest/domain', '@ingest/http'],
  'services/console': ['@ingest/schemas', '@ingest/platform', '@ingest/domain', '@ingest/http'],
  'services/processor': ['@ingest/schemas', '@ingest/platform', '@ingest/domain'],
  'services/crm-sink': ['@ingest/schemas', '@ingest/platform', '@ingest/domain'],
  // The operator command ships in the image like a service: the same layers.
  'tools/cli': ['@ingest/schemas', '@ingest/platform', '@ingest/domain'],
  // The SDK producers install (`@ingest/client`): bundled with the API's event schema only.
  'packages/client': ['@ingest/schemas'],
  // The test kit stands above the services: its harnesses start them in process, so it imports
  // them by name (through each service's public entry), and never the benchmark or the operator
  // command, whose tests use it.
  testkit: [
    '@ingest/schemas',
    '@ingest/platform',
    '@ingest/domain',
    '@ingest/http',
    '@ingest/gateway',
    '@ingest/console',
    '@ingest/processor',
    '@ingest/crm-sink',
  ],
  // The benchmark starts the services through the test kit and drives the packages directly.
  bench: ['@ingest/schemas', '@ingest/platform', '@ingest/domain', '@ingest/testkit'],
  // The deploy checks compare the manifests, alerts and dashboards with what the services define.
  deploy: ['@ingest/schemas', '@ingest/platform', '@ingest/domain', '@ingest/gateway', '@ingest/console', '@ingest/processor', '@ingest/crm-sink'],
  // Development tooling: builds and checks the services, the operator command and the image,
  // so it may read them (its tests may use the test kit). Nothing imports it: it is no package,
  // and a relative import may not leave its unit.
  scripts: [
    '@ingest/schemas',
    '@ingest/platform',
    '@ingest/domain',
    '@ingest/gateway',
    '@ingest/console',
    '@ingest/processor',
    '@ingest/crm-sink',
    '@ingest/cli',
  ],
};
/** Workspaces only tests may import (besides the units LAYERS lets: the benchmark). */
const TEST_ONLY = ['@ingest/testkit'];
/**
 * What the tests of one unit may import besides: the SDK's tests hold its local event check to
 * the API's own validator (domain) and read what the real gateway stored (platform's ClickHouse).
 */
const TEST_ONLY_BY_UNIT: Record<string, readonly string[]> = { 'packages/client': ['@ingest/domain', '@ingest/platform'] };
/** The manifests that may name the test kit: the root (workspaces are hoisted, so every test resolves it) and the benchmark. */
const TESTKIT_DEPENDENTS = ['.', 'bench'];

// `import … from 'x'`, `export … from 'x'`, `import 'x'` and `import('x')`.
const IMPORT = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;])import\s*\(?\s*['"]([^'"]+)['"]/g;

function unitOf(path: string): string {
  const [top, second] = path.split('/');
  return top === 'services' || top === 'packages' || top === 'tools' ? `${top}/${second}` : (top ?? '');
}

function sourceFiles(): string[] {
  const tracked = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '*.ts', '*.tsx'], { cwd: REPO_ROOT, encoding: 'utf8' });
  return tracked.split('\n').filter((f) => f !== '' && !f.includes('node_modules/') && unitOf(f) in LAYERS);
}

function importsOf(file: string): string[] {
  const text = readFileSync(join(REPO_ROOT, file), 'utf8');
  return [...text.matchAll(IMPORT)].map((m) => m[1] ?? m[2] ?? '');
}

const workspaceOf = (specifier: string) => /^@ingest\/[^/]+/.exec(specifier)?.[0];
/**
 * Test code, by one naming rule (docs/development.md): tests are `*.test.ts` (every vitest
 * project's files end so: `.integration.test.ts`, `.chaos.test.ts`, …) and test helpers are
 * `*.fixture.ts`, wherever they sit; the test kit is test code by location. Never bundled: the
 * images hold only what main.ts reaches.
 */
const isTestFile = (file: string) => /\.test\.tsx?$/.test(file);
const isFixture = (file: string) => /\.fixture\.tsx?$/.test(file);
const isTest = (file: string) => isTestFile(file) || isFixture(file) || unitOf(file) === 'testkit';
/** The units whose code ships in an image (or is bundled into one): where test helpers must say so by name. */
const isShipped = (unit: string) => unit === 'schemas' || unit.startsWith('packages/') || unit.startsWith('services/') || unit === 'tools/cli';

/** Each workspace's exports by package name, to follow an import by name to its file. */
function exportsByName(): Map<string, { dir: string; exports: Record<string, string> }> {
  return new Map(
    workspaceDirs().map((dir) => {
      const pkg = readPackage(dir);
      return [pkg.name ?? dir, { dir, exports: typeof pkg.exports === 'string' ? { '.': pkg.exports } : (pkg.exports ?? {}) }];
    }),
  );
}

/** The file an import names: a relative path (`./x.js` is `./x.ts` here) or a workspace's export; undefined for anything else. */
function resolveImport(from: string, specifier: string, files: ReadonlySet<string>, workspaces: ReturnType<typeof exportsByName>): string | undefined {
  if (specifier.startsWith('.')) {
    const base = normalize(join(dirname(from), specifier));
    const stem = base.replace(/\.[cm]?js$/, '');
    return [base, `${stem}.ts`, `${stem}.tsx`, `${base}/index.ts`].find((c) => files.has(c));
  }
  const [, name, subpath] = /^(@ingest\/[^/]+)(\/.*)?$/.exec(specifier) ?? [];
  const workspace = name === undefined ? undefined : workspaces.get(name);
  const target = workspace?.exports[`.${subpath ?? ''}`];
  return workspace && target ? normalize(join(workspace.dir, target)) : undefined;
}

/**
 * Test-helper naming, over an import graph (file -> the files it imports):
 * - a shipped file that is no test and no fixture, imported by test code only, is a test helper
 *   in disguise (the boundary and image checks would take it for production code);
 * - a shipped file that is no test and no fixture must not import a fixture (it would ship it).
 */
export function testHelperFindings(graph: ReadonlyMap<string, readonly string[]>): string[] {
  const importers = new Map<string, string[]>();
  for (const [file, targets] of graph) for (const t of targets) importers.set(t, [...(importers.get(t) ?? []), file]);
  const shippedCode = (file: string) => isShipped(unitOf(file)) && !isTest(file);
  const disguised = [...graph.keys()]
    .filter((file) => shippedCode(file) && (importers.get(file)?.length ?? 0) > 0 && (importers.get(file) ?? []).every(isTest))
    .map((file) => `${file} is imported only by tests (${(importers.get(file) ?? []).join(', ')}): name it *.fixture.ts`);
  const shipping = [...graph]
    .filter(([file]) => shippedCode(file))
    .flatMap(([file, targets]) =>
      targets.filter((t) => isFixture(t) || unitOf(t) === 'testkit').map((t) => `${file} imports the test helper ${t}: shipped code never does`),
    );
  return [...disguised, ...shipping];
}

describe('import boundaries', () => {
  const files = sourceFiles();

  it('finds the sources it checks (the scan itself works)', () => {
    expect(files.length).toBeGreaterThan(300);
    expect(files).toContain('services/gateway/src/app.ts');
    expect(importsOf('services/gateway/src/app.ts').some((s) => s.startsWith('./'))).toBe(true);
  });

  it('no relative import leaves its service or package', () => {
    const crossings = files.flatMap((file) =>
      importsOf(file)
        .filter((s) => s.startsWith('.'))
        .map((s) => ({ s, target: relative(REPO_ROOT, normalize(join(REPO_ROOT, dirname(file), s))) }))
        .filter(({ target }) => unitOf(target) !== unitOf(file))
        .map(({ s, target }) => `${file} imports ${s} (${target}): import the package by name instead`),
    );
    expect(crossings).toEqual([]);
  });

  it('test helpers are named *.fixture.ts: no shipped file is imported by tests alone, none imports a fixture', () => {
    const fileSet = new Set(files);
    const workspaces = exportsByName();
    const graph = new Map(files.map((file) => [file, importsOf(file).flatMap((s) => resolveImport(file, s, fileSet, workspaces) ?? [])] as const));
    // The scan follows relative imports and imports by name.
    expect(graph.get('services/gateway/src/main.ts')).toContain('services/gateway/src/index.ts');
    expect(graph.get('testkit/src/gateway/gateway.fixture.ts')).toContain('services/gateway/src/index.ts');
    expect(testHelperFindings(graph)).toEqual([]);
  });

  it('tells a test helper in disguise, and shipped code that imports a fixture', () => {
    const graph = new Map<string, string[]>([
      ['services/x/src/main.ts', ['services/x/src/app.ts']],
      ['services/x/src/app.ts', []],
      ['services/x/src/app.test.ts', ['services/x/src/app.ts', 'services/x/src/helpers.ts', 'services/x/src/app.fixture.ts']],
      ['services/x/src/helpers.ts', []],
      ['services/x/src/app.fixture.ts', ['services/x/src/more-helpers.ts']],
      ['services/x/src/more-helpers.ts', []],
      ['services/x/src/routes.ts', ['services/x/src/app.fixture.ts']],
    ]);
    expect(testHelperFindings(graph)).toEqual([
      'services/x/src/helpers.ts is imported only by tests (services/x/src/app.test.ts): name it *.fixture.ts',
      'services/x/src/more-helpers.ts is imported only by tests (services/x/src/app.fixture.ts): name it *.fixture.ts',
      'services/x/src/routes.ts imports the test helper services/x/src/app.fixture.ts: shipped code never does',
    ]);
  });

  it('workspaces are imported only downwards: platform below domain below http below the services, which never import each other', () => {
    const violations = files.flatMap((file) => {
      const unit = unitOf(file);
      const allowed = LAYERS[unit];
      if (allowed === 'any' || allowed === undefined) return [];
      const manifest = join(REPO_ROOT, unit, 'package.json');
      // A unit that is not a workspace (scripts, deploy) has no name of its own to import.
      const self = existsSync(manifest) ? (JSON.parse(readFileSync(manifest, 'utf8')) as { name: string }) : { name: '' };
      return importsOf(file)
        .map(workspaceOf)
        .filter((w): w is string => w !== undefined && w !== self.name)
        .filter((w) => !allowed.includes(w) && !(isTest(file) && (TEST_ONLY.includes(w) || TEST_ONLY_BY_UNIT[unit]?.includes(w))))
        .map((w) => `${file} (${unit}) imports ${w}`);
    });
    expect(violations).toEqual([]);
  });
});

/** A workspace's dependencies on other workspaces, by name, from every dependency field of its manifest. */
function workspaceDependencies(dir: string, names: ReadonlySet<string>): string[] {
  const pkg = readPackage(dir);
  const fields = [pkg.dependencies, pkg.devDependencies, pkg.peerDependencies, pkg.optionalDependencies];
  return [...new Set(fields.flatMap((f) => Object.keys(f ?? {})))].filter((n) => names.has(n)).sort();
}

/** The cycles of a graph (each as the path that closes it), by depth-first search. */
export function cyclesOf(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  const cycles: string[][] = [];
  const done = new Set<string>();
  const visit = (node: string, path: string[]) => {
    const at = path.indexOf(node);
    if (at >= 0) return void cycles.push([...path.slice(at), node]);
    if (done.has(node)) return;
    for (const next of graph.get(node) ?? []) visit(next, [...path, node]);
    done.add(node);
  };
  for (const node of [...graph.keys()].sort()) visit(node, []);
  return cycles;
}

describe('workspace manifests', () => {
  const dirs = workspaceDirs();
  const nameOf = new Map(dirs.map((dir) => [dir, readPackage(dir).name ?? dir]));
  const names = new Set(nameOf.values());

  it('reads every workspace (the scan itself works)', () => {
    expect(dirs).toEqual(expect.arrayContaining(['testkit', 'bench', 'services/gateway', 'packages/platform', 'tools/cli', 'schemas']));
    expect(workspaceDependencies('testkit', names)).toContain('@ingest/gateway');
  });

  it('only the root and the benchmark list the test kit: no package or service depends on it', () => {
    const listing = ['.', ...dirs].filter((dir) => !TESTKIT_DEPENDENTS.includes(dir) && workspaceDependencies(dir, names).includes('@ingest/testkit'));
    expect(listing.map((dir) => `${dir}/package.json lists @ingest/testkit: tests resolve it from the root's devDependencies`)).toEqual([]);
    expect(Object.keys(readPackage('.').devDependencies ?? {})).toContain('@ingest/testkit');
  });

  it('no workspace depends on itself through others (the dependency graph has no cycle)', () => {
    const graph = new Map(dirs.map((dir) => [nameOf.get(dir) ?? dir, workspaceDependencies(dir, names)]));
    expect(cyclesOf(graph).map((c) => c.join(' -> '))).toEqual([]);
  });

  it('finds a cycle where there is one', () => {
    const graph = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(cyclesOf(graph)).toEqual([['a', 'b', 'c', 'a']]);
    expect(
      cyclesOf(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toEqual([]);
  });
});

describe("services' public entries", () => {
  const services = workspaceDirs().filter((dir) => dir.startsWith('services/'));
  /** What a service may export: its entry, its settings schema alone, and build tools (`./build/...`). */
  const allowedExport = (subpath: string, target: string) =>
    (subpath === '.' && target === './src/index.ts') || (subpath === './config' && target === './src/config.ts') || subpath.startsWith('./build/');

  it('each service exports one entry (src/index.ts), its settings and build tools: no entry exists for tests', () => {
    expect(services).toEqual(expect.arrayContaining(['services/gateway', 'services/console', 'services/processor', 'services/crm-sink']));
    for (const dir of services) {
      const exports = readPackage(dir).exports;
      expect(typeof exports === 'object' ? exports['.'] : exports, dir).toBe('./src/index.ts');
      const extra = Object.entries(typeof exports === 'object' ? exports : {}).filter(([subpath, target]) => !allowedExport(subpath, target));
      expect(
        extra.map(([subpath]) => `${dir} exports ${subpath}: export it from src/index.ts if the service offers it, else keep its users inside the service`),
      ).toEqual([]);
    }
  });

  it("main.ts assembles its service from the service's own entry, so the entry is never test-only", () => {
    for (const dir of services.filter((d) => existsSync(join(REPO_ROOT, d, 'src/main.ts')))) {
      expect(importsOf(`${dir}/src/main.ts`), dir).toContain('./index.js');
    }
  });
});

describe('the picture in docs/architecture.md', () => {
  /** The "What may import what" table: unit -> the workspaces it may import. */
  function documentedLayers(): Record<string, string[]> {
    const text = readFileSync(join(REPO_ROOT, 'docs/architecture.md'), 'utf8');
    const section = /^## What may import what$([\s\S]*?)^## /m.exec(text)?.[1] ?? '';
    const rows = section.split('\n').filter((line) => /^\| `[^`]+` \|/.test(line));
    return Object.fromEntries(
      rows.map((row) => {
        const cells = row.split('|').map((c) => c.trim());
        const unit = /`([^`]+)`/.exec(cells[1] ?? '')?.[1] ?? '';
        return [unit, [...(cells[3] ?? '').matchAll(/`(@ingest\/[^`]+)`/g)].map((m) => m[1] ?? '').sort()];
      }),
    );
  }

  it('is exactly what this check enforces: every unit, and what each may import', () => {
    const documented = documentedLayers();
    const enforced = Object.fromEntries(Object.entries(LAYERS).map(([unit, allowed]) => [unit, allowed === 'any' ? ['any'] : [...allowed].sort()]));
    expect(Object.keys(documented).length, 'rows in the table').toBeGreaterThan(10);
    expect(documented).toEqual(enforced);
  });
});
