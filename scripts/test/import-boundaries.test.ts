/**
 * The shape of the repository, kept: services stand side by side on shared packages and never
 * reach into each other, and the packages are layered (platform below domain below http). Every import of
 * every TypeScript file is checked, tests included:
 * - a relative import stays inside its own unit (a service, a package, a tool, schemas, scripts,
 *   deploy): so nothing imports scripts/, which is no package;
 * - an import of a workspace by name follows the layers below (tests may also use the test kit).
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { execFileSync } from 'node:child_process';
import { REPO_ROOT } from '@ingest/platform';
import { describe, expect, it } from 'vitest';

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
  // The harnesses start services in process, so they import them by name.
  'packages/testkit': 'any',
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
const TEST_ONLY = ['@ingest/testkit'];

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
/** Tests and their helpers beside them (never bundled: the images hold only what main.ts reaches). */
const isTest = (file: string) => /\.(test|fixture|harness)\.tsx?$/.test(file) || /\/(test|test-support|chaos)\//.test(file);

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
        .filter((w) => !allowed.includes(w) && !(isTest(file) && TEST_ONLY.includes(w)))
        .map((w) => `${file} (${unit}) imports ${w}`);
    });
    expect(violations).toEqual([]);
  });
});
