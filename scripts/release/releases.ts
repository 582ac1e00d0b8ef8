/**
 * Releases are annotated git tags `v<major>.<minor>.<patch>` (docs/releases.md). This module
 * answers the two questions the release script and the rolling-upgrade test ask of git: which
 * releases exist, and which one a checkout upgrades from. Pure functions take plain data, so the
 * rules are unit-tested without a repository.
 */
import { execFileSync } from 'node:child_process';

export interface ReleaseTag {
  tag: string;
  /** The commit the tag points at (peeled: an annotated tag's object is not the commit). */
  commit: string;
}

const TAG = /^v(\d+)\.(\d+)\.(\d+)$/;

/** [major, minor, patch] of a release tag or version; undefined for anything else (e.g. `v1.2`, `v1.2.3-rc1`). */
export function parseVersion(tagOrVersion: string): [number, number, number] | undefined {
  const m = TAG.exec(tagOrVersion.startsWith('v') ? tagOrVersion : `v${tagOrVersion}`);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

export function compareVersions(a: string, b: string): number {
  const [va, vb] = [parseVersion(a), parseVersion(b)];
  if (!va || !vb) throw new Error(`not a release version: ${va ? b : a}`);
  return va[0] - vb[0] || va[1] - vb[1] || va[2] - vb[2];
}

/** Release tags, newest first; tags that are not `vX.Y.Z` are ignored. */
export function sortReleases(tags: readonly ReleaseTag[]): ReleaseTag[] {
  return tags.filter((t) => parseVersion(t.tag)).sort((a, b) => compareVersions(b.tag, a.tag));
}

/**
 * The release a checkout at `head` upgrades from (version N; the checkout is N+1): the newest
 * release whose commit is not `head` itself. When the only release is `head` (the first
 * release, checked out as tagged), that release is N and the working tree N+1: the same code
 * built twice still runs as two deployments side by side, and any uncommitted change is new.
 * `tags` must be the releases reachable from `head`.
 */
export function previousRelease(tags: readonly ReleaseTag[], head: string): ReleaseTag | undefined {
  const sorted = sortReleases(tags);
  return sorted.find((t) => t.commit !== head) ?? sorted[0];
}

const git = (root: string, args: string[]) => execFileSync('git', args, { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** The release tags reachable from HEAD, with their commits. */
export function reachableReleases(root: string): ReleaseTag[] {
  const lines = git(root, ['tag', '--list', 'v*', '--merged', 'HEAD', '--format=%(refname:short) %(*objectname)%(objectname)']);
  return lines
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      // %(*objectname) is the peeled commit of an annotated tag (empty for a lightweight one),
      // followed by %(objectname); a lightweight tag's object is the commit itself.
      const [tag = '', ids = ''] = line.split(' ');
      return { tag, commit: ids.slice(0, 40) };
    });
}

export function headCommit(root: string): string {
  return git(root, ['rev-parse', 'HEAD']);
}

/** Sets the release version in a package.json's text: its `version`, and its ranges on the other workspaces (`@ingest/*`). */
export function bumpPackageJson(text: string, version: string): string {
  const pkg = JSON.parse(text) as Record<string, unknown>;
  if (typeof pkg.version === 'string') pkg.version = version;
  for (const field of ['dependencies', 'devDependencies', 'peerDependencies', 'optionalDependencies']) {
    const deps = pkg[field] as Record<string, string> | undefined;
    if (!deps) continue;
    for (const [name, range] of Object.entries(deps)) {
      // `*` follows whatever the workspace is; a caret range names a version and must move with it.
      if (name.startsWith('@ingest/') && range.startsWith('^')) deps[name] = `^${version}`;
    }
  }
  const indent = /^[ \t]+/m.exec(text)?.[0] ?? '  ';
  return `${JSON.stringify(pkg, null, indent)}\n`;
}

/** Sets the tag of every `event-ingestion/<service>:<version>` image in a manifest. */
export function bumpImageTags(text: string, version: string): string {
  return text.replace(/(event-ingestion\/[a-z-]+):\d+\.\d+\.\d+\b/g, `$1:${version}`);
}
