/**
 * The production bundles (esbuild), decided in one place for `npm run build` and for the image
 * check: each service's src/main.ts into <service>/dist/main.js (there, Node resolves the
 * service's own nested node_modules before the root's), and the operator command `ingest`
 * (tools/cli/src/main.ts: admin, deadletters, credentials-key, setup, healthcheck) into dist/ingest.mjs, and the
 * image's staging script (stage.ts), which only the Docker build runs.
 * Workspace packages (@ingest/*) are bundled because they are TypeScript sources; third-party
 * packages stay external and come from node_modules at run time. The list is plain data (the
 * image's staging script reads it too); esbuild runs in build-bundles.ts.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { readPackage, REPO_ROOT, workspaceDirs } from '../lib/workspaces.js';

export interface BundleEntry {
  name: string;
  /** Source file, relative to the root. */
  entry: string;
  /** Output file, relative to the output root (the repository root for `npm run build`). */
  outfile: string;
  /** Run directly as a command (shebang, executable). */
  executable?: boolean;
  /** Used by the image build itself, not shipped (see stage.ts). */
  buildOnly?: boolean;
}

export const INGEST_BUNDLE = 'dist/ingest.mjs';
/** The operator command's workspace (its bundle sits at the root's dist/, where the image links it from). */
export const CLI_WORKSPACE = 'tools/cli';

export function bundleEntries(root = REPO_ROOT): BundleEntry[] {
  const services = workspaceDirs(root)
    .filter((dir) => dir.startsWith('services/') && existsSync(join(root, dir, 'src/main.ts')))
    .map((dir) => ({ name: dir.split('/').pop() ?? dir, entry: `${dir}/src/main.ts`, outfile: `${dir}/dist/main.js` }));
  return [
    ...services,
    { name: 'ingest', entry: `${CLI_WORKSPACE}/src/main.ts`, outfile: INGEST_BUNDLE, executable: true },
    { name: 'stage-image', entry: 'scripts/image/stage.ts', outfile: 'dist/build/stage-image.mjs', buildOnly: true },
  ];
}

/** Third-party packages any workspace depends on: left to node_modules. */
export function externalPackages(root = REPO_ROOT): string[] {
  const names = workspaceDirs(root).flatMap((dir) => Object.keys(readPackage(dir, root).dependencies ?? {}));
  return [...new Set(names)].filter((d) => !d.startsWith('@ingest/')).sort();
}
