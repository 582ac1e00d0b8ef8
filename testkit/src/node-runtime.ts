/**
 * The project runs on one Node major, the one `.nvmrc` names (the README's commands install it
 * when the machine's is another; the image is node:24-slim). Every service process a test starts
 * is checked against it through what the service itself reports (prom-client's
 * `nodejs_version_info` on /metrics), so a test run on another runtime fails instead of proving
 * something that does not ship.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '@ingest/platform';

/** The major of `.nvmrc` (e.g. "24"). */
export function projectNodeMajor(): string {
  return readFileSync(join(REPO_ROOT, '.nvmrc'), 'utf8').trim().split('.')[0] ?? '';
}

/** The Node version a service reports in its /metrics text (`v24.21.0`), or undefined. */
export function reportedNodeVersion(metricsText: string): string | undefined {
  return /^nodejs_version_info\{[^}]*version="(v[\d.]+)"/m.exec(metricsText)?.[1];
}

/** Throws naming the process unless it reports the project's Node major. */
export function assertProjectNode(what: string, metricsText: string): string {
  const version = reportedNodeVersion(metricsText);
  const expected = projectNodeMajor();
  if (version?.slice(1).split('.')[0] !== expected) {
    throw new Error(
      `${what} runs Node ${version ?? '(not reported)'}, the project's runtime is Node ${expected} (.nvmrc); run the README's commands, which install it`,
    );
  }
  return version;
}
