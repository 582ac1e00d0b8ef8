/**
 * The previous release's production bundles, for the rolling-upgrade test (docs/releases.md):
 * a git worktree of the release's tag under `.local/upgrade/<commit>/`, with node_modules and
 * its esbuild bundles, built once per commit and reused (a tag's commit never changes). Nothing
 * is fetched: the tag comes with every clone, and the worktree's packages are either the
 * checkout's own (linked) or installed with `npm ci --offline` from the npm cache.
 *
 * node_modules: when the previous release's lockfile lists the same third-party packages as
 * the checkout's (ignoring the workspaces' own entries, whose versions change with every
 * release), the worktree's node_modules is a folder of links to the checkout's packages, except
 * the workspace links (`@ingest/*`), which point into the worktree: its own sources are built,
 * never the checkout's. That takes a second and no disk. When they differ, `npm ci --offline`
 * installs exactly what the release locked, as its image would have.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';
import { REPO_ROOT, readPackage, workspaceDirs } from '../lib/workspaces.js';
import { headCommit, previousRelease, reachableReleases } from './releases.js';

const run = promisify(execFile);

export interface ReleaseBuild {
  tag: string;
  commit: string;
  /** The worktree: the root the release's bundles run from (`services/<name>/dist/main.js`). */
  root: string;
  /** How its node_modules came to be. */
  nodeModules: 'linked' | 'npm ci --offline';
  /** Whether the worktree and bundles were there already. */
  cached: boolean;
}

/** Where worktrees of releases are kept: under the checkout's .local/ (git-ignored). */
export const RELEASES_DIR = join(REPO_ROOT, '.local', 'upgrade');

/** The release this checkout upgrades from (releases.ts, previousRelease), built; see the header. */
export async function buildPreviousRelease(): Promise<ReleaseBuild> {
  const release = previousRelease(reachableReleases(REPO_ROOT), headCommit(REPO_ROOT));
  if (!release) {
    throw new Error(
      `no release tag (vX.Y.Z) is reachable from HEAD: make the first release (docs/releases.md), e.g. git tag -a v0.1.0 -m "Release v0.1.0" ${headCommit(REPO_ROOT)}`,
    );
  }
  const root = join(RELEASES_DIR, release.commit);
  const builtMarker = join(root, '.upgrade-bundles-built');
  const cached = existsSync(builtMarker) && (await worktreeAt(root)) === release.commit;
  if (!cached) await addWorktree(root, release.commit);
  const nodeModules = await prepareNodeModules(root);
  if (!cached) {
    await buildBundles(root);
    writeFileSync(builtMarker, `${release.tag} ${release.commit}\n`);
  }
  return { ...release, root, nodeModules, cached };
}

/** The checkout's own bundles (`npm run build` without the web app), as the image runs them. */
export async function buildCurrentBundles(): Promise<void> {
  await buildBundles(REPO_ROOT);
}

/** The commit checked out at `dir` when it is a worktree of its own (not the enclosing checkout). */
async function worktreeAt(dir: string): Promise<string | undefined> {
  if (!existsSync(join(dir, '.git'))) return undefined;
  return (await run('git', ['rev-parse', 'HEAD'], { cwd: dir })).stdout.trim();
}

async function addWorktree(dir: string, commit: string): Promise<void> {
  rmSync(dir, { recursive: true, force: true });
  // A worktree whose folder was deleted is still registered until pruned.
  await run('git', ['worktree', 'prune'], { cwd: REPO_ROOT });
  mkdirSync(dirname(dir), { recursive: true });
  await run('git', ['worktree', 'add', '--detach', '--force', dir, commit], { cwd: REPO_ROOT });
}

/** The third-party packages a lockfile installs: every entry but the workspaces' own. */
export function thirdPartyPackages(lockText: string): string {
  const lock = JSON.parse(lockText) as { packages?: Record<string, { link?: boolean }> };
  const entries = Object.entries(lock.packages ?? {})
    .filter(([path, entry]) => path.includes('node_modules/') && !entry.link)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify(entries);
}

async function prepareNodeModules(root: string): Promise<ReleaseBuild['nodeModules']> {
  const lock = (dir: string) => thirdPartyPackages(readFileSync(join(dir, 'package-lock.json'), 'utf8'));
  const mode: ReleaseBuild['nodeModules'] = lock(root) === lock(REPO_ROOT) ? 'linked' : 'npm ci --offline';
  const stateFile = join(root, 'node_modules', '.upgrade-state');
  const state = `${mode}\n${mode === 'linked' ? '' : lock(root)}`;
  if (existsSync(stateFile) && readFileSync(stateFile, 'utf8') === state) return mode;
  rmSync(join(root, 'node_modules'), { recursive: true, force: true });
  if (mode === 'linked') linkNodeModules(root);
  else await run('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
  writeFileSync(stateFile, state);
  return mode;
}

/** node_modules of `root` as links to the checkout's, the workspace packages excepted (see the header). */
function linkNodeModules(root: string): void {
  const source = join(REPO_ROOT, 'node_modules');
  const target = join(root, 'node_modules');
  mkdirSync(target, { recursive: true });
  const workspaces = new Map(workspaceDirs(root).map((dir) => [readPackage(dir, root).name ?? dir, dir]));
  const scopes = new Set([...workspaces.keys()].filter((n) => n.startsWith('@')).map((n) => n.split('/')[0] ?? n));
  for (const entry of readdirSync(source)) {
    // npm's own record of the tree, and tools' caches: the checkout's, not to be shared.
    if (entry === '.package-lock.json' || entry === '.cache' || workspaces.has(entry)) continue;
    if (!scopes.has(entry)) {
      symlinkSync(join(source, entry), join(target, entry));
      continue;
    }
    // A scope that holds workspaces: its third-party packages linked one by one.
    mkdirSync(join(target, entry));
    for (const pkg of readdirSync(join(source, entry))) {
      if (!workspaces.has(`${entry}/${pkg}`)) symlinkSync(join(source, entry, pkg), join(target, entry, pkg));
    }
  }
  for (const [name, dir] of workspaces) {
    const link = join(target, name);
    mkdirSync(dirname(link), { recursive: true });
    symlinkSync(relative(dirname(link), join(root, dir)), link);
    // A workspace's own nested packages (a version other than the root's).
    const nested = join(REPO_ROOT, dir, 'node_modules');
    if (existsSync(nested) && !existsSync(join(root, dir, 'node_modules'))) symlinkSync(nested, join(root, dir, 'node_modules'));
  }
}

/** The esbuild step of the tree at `root` itself (its scripts/image/build-bundles.ts), on the project's Node: a release is built as it built itself. */
async function buildBundles(root: string): Promise<void> {
  const script = "const { buildBundles } = await import('./scripts/image/build-bundles.ts'); await buildBundles();";
  await run(process.execPath, ['--import', 'tsx', '--input-type=module', '--eval', script], { cwd: root, maxBuffer: 16 * 1024 * 1024 });
}
