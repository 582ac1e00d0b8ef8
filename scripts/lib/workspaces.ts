/**
 * The npm workspaces of the repository, read from the root package.json's `workspaces` (plain
 * folders and `dir/*`, as npm reads them), so build and checks cover a new package without
 * naming it anywhere.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface PackageJson {
  name?: string;
  exports?: string | Record<string, string>;
  workspaces?: string[];
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
  optionalDependencies?: Record<string, string>;
}

export const REPO_ROOT = new URL('../../', import.meta.url).pathname;

export const readPackage = (dir: string, root = REPO_ROOT): PackageJson => JSON.parse(readFileSync(join(root, dir, 'package.json'), 'utf8')) as PackageJson;

/** Workspace folders relative to the root, in the order the root names them. */
export function workspaceDirs(root = REPO_ROOT): string[] {
  return (readPackage('.', root).workspaces ?? []).flatMap((pattern) => {
    if (pattern.endsWith('/*') && !pattern.slice(0, -2).includes('*')) {
      const parent = pattern.slice(0, -2);
      if (!existsSync(join(root, parent))) return [];
      return readdirSync(join(root, parent), { withFileTypes: true })
        .filter((d) => d.isDirectory() && existsSync(join(root, parent, d.name, 'package.json')))
        .map((d) => `${parent}/${d.name}`)
        .sort();
    }
    if (pattern.includes('*')) throw new Error(`workspace pattern ${pattern}: teach workspaceDirs() this glob`);
    return [pattern];
  });
}
