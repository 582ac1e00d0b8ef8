/**
 * `npm run release -- <X.Y.Z>`: makes release vX.Y.Z of the checkout's HEAD (docs/releases.md).
 * When the version changes it sets it in every package.json (and the workspaces' ranges on each
 * other), in the Kubernetes manifests' image tags and in the lockfile (offline: no package
 * changes), and commits that; then it makes the annotated tag. It pushes nothing.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT, workspaceDirs } from '../lib/workspaces.js';
import { bumpImageTags, bumpPackageJson, compareVersions, parseVersion, sortReleases } from './releases.js';

const K8S_DIR = 'deploy/k8s';

function fail(message: string): never {
  console.error(`release: ${message}`);
  process.exit(1);
}

const sh = (command: string, args: string[]) => execFileSync(command, args, { cwd: REPO_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] }).trim();

const version = process.argv[2] ?? '';
if (!parseVersion(version) || version.startsWith('v')) fail(`usage: npm run release -- <major.minor.patch> (got "${version}")`);
const tag = `v${version}`;

if (sh('git', ['status', '--porcelain'])) fail('the working tree has changes: commit or stash them first');
const allTags = sh('git', ['tag', '--list', 'v*']).split('\n').filter(Boolean);
if (allTags.includes(tag)) fail(`${tag} exists already`);
const newest = sortReleases(allTags.map((t) => ({ tag: t, commit: '' })))[0];
if (newest && compareVersions(tag, newest.tag) <= 0) fail(`${tag} is not newer than the newest release, ${newest.tag}`);

const rootPackage = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version?: string };
if (rootPackage.version !== version) {
  const files = [
    'package.json',
    ...workspaceDirs().map((dir) => `${dir}/package.json`),
    ...readdirSync(join(REPO_ROOT, K8S_DIR))
      .filter((f) => f.endsWith('.yaml'))
      .map((f) => `${K8S_DIR}/${f}`),
  ];
  for (const file of files) {
    const path = join(REPO_ROOT, file);
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, file.endsWith('.json') ? bumpPackageJson(text, version) : bumpImageTags(text, version));
  }
  // The lockfile records each workspace's version; nothing else may change, hence --offline.
  sh('npm', ['install', '--package-lock-only', '--ignore-scripts', '--offline', '--no-audit', '--no-fund']);
  sh('git', ['commit', '--quiet', '-am', `Release ${tag}`]);
  console.log(`release: version ${rootPackage.version ?? '(none)'} -> ${version}, committed`);
}
sh('git', ['tag', '--annotate', tag, '--message', `Release ${tag}`]);
console.log(`release: tagged ${tag} on ${sh('git', ['rev-parse', '--short', 'HEAD'])}; publish with: git push origin HEAD ${tag}`);
