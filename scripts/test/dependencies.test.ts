/**
 * Every workspace declares the packages it imports, and nothing else: a package used but not
 * declared works here only because npm hoists another workspace's copy (and breaks when that
 * one changes or the image prunes it); a package declared but unused is installed into the image
 * for nothing.
 *
 * Workspaces are discovered from the root package.json's `workspaces`, so a new package is
 * covered without touching this test. Imports are read with TypeScript's own pre-processor
 * (`ts.preProcessFile`: static, dynamic and type imports, `export … from`). Hand-written on
 * purpose: depcheck and knip would each need a configuration per workspace to express the
 * three rules below, while this is one pass over `git ls-files` that runs in well under a second.
 *
 * The rules, per workspace:
 * - production code imports only the workspace's `dependencies` (the image keeps nothing else:
 *   `npm prune --omit=dev`). Production code is what the entry points reach by relative imports:
 *   `src/main.ts` and the package's `exports` (except test-only subpaths such as `./testing`), so
 *   no file-naming convention decides it;
 * - every other file (tests, fixtures, fakes, harnesses, the dashboard's web sources bundled at
 *   build time, build configuration) may also use the workspace's `devDependencies` and the
 *   root's (vitest, fast-check, …);
 * - every declared package is imported by some file of the workspace (`@types/x` counts as used
 *   when `x` is, and tools named in a package.json script count as used);
 * - the test kit is test code by location: it has no production files and declares everything
 *   as devDependencies. A workspace's `dependencies` are kept by `npm prune --omit=dev` in the
 *   image's build stage even when the workspace itself is only a devDependency of the root, so
 *   this is what keeps vitest, vite, playwright-core and the rest out of the images.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { type PackageJson, readPackage, REPO_ROOT, workspaceDirs } from '../lib/workspaces.js';

const root = REPO_ROOT;
/** Workspaces that are test code by location: nothing in them runs in production. */
const TEST_WORKSPACES = new Set(['testkit']);

const SOURCE = /\.(?:[cm]?[jt]s|tsx|jsx)$/;

function sourceFiles(dir: string): string[] {
  const tracked = execFileSync('git', ['ls-files', '-z', '--', dir], { cwd: root, encoding: 'utf8' }).split('\0');
  return tracked.filter((f) => SOURCE.test(f) && existsSync(join(root, f)));
}

const builtins = new Set(builtinModules);
/** The package a specifier names (`@scope/name/sub` → `@scope/name`), or undefined for relative paths and builtins. */
export function packageOf(specifier: string): string | undefined {
  if (specifier.startsWith('.') || specifier.startsWith('/') || specifier.startsWith('node:')) return undefined;
  if (/^[a-z]+:/i.test(specifier)) return undefined; // data:, virtual: and other URL-like ids
  const parts = specifier.split('/');
  const name = specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
  if (!name || builtins.has(name)) return undefined;
  return name;
}

const specifiersOf = (file: string) => ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true).importedFiles.map((f) => f.fileName);

/** The tracked file a relative specifier names (`./x.js` is `./x.ts` in these sources). */
function resolveRelative(from: string, specifier: string, files: Set<string>): string | undefined {
  const base = join(dirname(from), specifier);
  const stem = base.replace(/\.[cm]?js$/, '');
  const candidates = [base, `${stem}.ts`, `${stem}.tsx`, `${stem}.mts`, `${base}/index.ts`, `${base}/index.js`];
  return candidates.find((c) => files.has(c));
}

/** Files reachable by relative imports from the workspace's production entry points. */
function productionFiles(dir: string, pkg: PackageJson, files: Set<string>): Set<string> {
  const exported = Object.entries(typeof pkg.exports === 'string' ? { '.': pkg.exports } : (pkg.exports ?? {}))
    // Test-only subpaths (`./testing`) and build-time tools (`./build/...`) never run in production.
    .filter(([subpath]) => !/test/i.test(subpath) && !subpath.startsWith('./build/'))
    .map(([, target]) => target);
  const entries = ['src/main.ts', ...exported].map((e) => join(dir, e)).filter((e) => files.has(e));
  const reached = new Set<string>();
  const queue = [...entries];
  for (let file = queue.pop(); file !== undefined; file = queue.pop()) {
    if (reached.has(file)) continue;
    reached.add(file);
    for (const specifier of specifiersOf(file)) {
      if (!specifier.startsWith('.')) continue;
      const target = resolveRelative(file, specifier, files);
      if (target) queue.push(target);
    }
  }
  return reached;
}

interface Finding {
  workspace: string;
  problem: string;
}

function checkWorkspace(dir: string, rootDevDependencies: Set<string>): Finding[] {
  const pkg = readPackage(dir);
  const runtime = new Set([...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.peerDependencies ?? {}), ...Object.keys(pkg.optionalDependencies ?? {})]);
  const dev = new Set(Object.keys(pkg.devDependencies ?? {}));
  const findings: Finding[] = [];
  const used = new Set<string>();
  const files = new Set(sourceFiles(dir));
  const production = TEST_WORKSPACES.has(dir) ? new Set<string>() : productionFiles(dir, pkg, files);
  for (const file of files) {
    for (const name of specifiersOf(file).map(packageOf)) {
      if (name === undefined || name === pkg.name) continue;
      used.add(name);
      const allowed = runtime.has(name) || (!production.has(file) && (dev.has(name) || rootDevDependencies.has(name)));
      if (allowed) continue;
      const where = dev.has(name) ? 'only in devDependencies (the image prunes them)' : 'not declared';
      findings.push({ workspace: dir, problem: `${file} imports ${name}, ${where}` });
    }
  }
  const scripts = Object.values(pkg.scripts ?? {}).join(' ');
  for (const name of [...runtime, ...dev]) {
    const typesOf = name.startsWith('@types/') ? name.slice('@types/'.length).replace(/^(.+)__(.+)$/, '@$1/$2') : undefined;
    const isUsed =
      used.has(name) || (typesOf !== undefined && (used.has(typesOf) || builtins.has(typesOf))) || new RegExp(`(^|\\s)${name}(\\s|$)`).test(scripts);
    if (!isUsed) findings.push({ workspace: dir, problem: `declares ${name} but no file imports it` });
  }
  return findings;
}

describe('declared dependencies', () => {
  const workspaces = workspaceDirs();
  const rootDevDependencies = new Set(Object.keys(readPackage('.').devDependencies ?? {}));

  it('finds the workspaces of the root package.json, and the production code of each service', () => {
    expect(workspaces.length).toBeGreaterThanOrEqual(4);
    expect(workspaces).toContain('schemas');
    // Reached from main.ts by relative imports; a test next to it is not.
    const gateway = readPackage('services/gateway');
    const files = new Set(sourceFiles('services/gateway'));
    const production = productionFiles('services/gateway', gateway, files);
    expect(production.has('services/gateway/src/main.ts')).toBe(true);
    expect(production.size).toBeGreaterThan(12);
    expect([...production].filter((f) => f.includes('.test.'))).toEqual([]);
    // The console's too: its admin and dashboard code, reached from its main.ts.
    const console = productionFiles('services/console', readPackage('services/console'), new Set(sourceFiles('services/console')));
    expect([...console].filter((f) => f.startsWith('services/console/src/admin/')).length).toBeGreaterThan(5);
    expect([...console].filter((f) => f.startsWith('services/console/src/dashboard/')).length).toBeGreaterThan(5);
  });

  it.each(workspaces)('%s declares what it imports, and nothing else', (dir) => {
    expect(checkWorkspace(dir, rootDevDependencies).map((f) => f.problem)).toEqual([]);
  });

  it('the test kit declares only devDependencies, so none of them reaches an image', () => {
    for (const dir of TEST_WORKSPACES) {
      expect(workspaces).toContain(dir);
      expect(readPackage(dir).dependencies ?? {}, dir).toEqual({});
    }
  });

  it('tells a package from a path or a builtin', () => {
    expect(packageOf('@ingest/shared/testing')).toBe('@ingest/shared');
    expect(packageOf('fastify')).toBe('fastify');
    expect(packageOf('prom-client/lib/x.js')).toBe('prom-client');
    expect(packageOf('node:fs')).toBeUndefined();
    expect(packageOf('fs/promises')).toBeUndefined();
    expect(packageOf('./local.js')).toBeUndefined();
  });
});
