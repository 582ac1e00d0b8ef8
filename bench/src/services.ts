/**
 * The real gateway and processor as OS processes, from the esbuild bundles production runs
 * (`node --enable-source-maps dist/<name>/main.js`, as in the Dockerfile) or from the sources
 * through tsx.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Cleanup } from './cleanup.js';
import { type ServiceProcess, startServiceProcess } from '@ingest/testkit';
import type { Child } from './processes.js';
import { say } from './say.js';

export const SERVICES = ['gateway', 'console', 'processor'] as const;
export type ServiceName = (typeof SERVICES)[number];

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (entry.name === 'node_modules') continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** Why the bundles need a build, or undefined when they are current. */
function staleReason(root: string): string | undefined {
  const bundles = SERVICES.map((s) => join(root, 'services', s, 'dist', 'main.js'));
  const missing = bundles.filter((b) => !existsSync(b));
  if (missing.length > 0) return `missing ${missing.map((m) => m.slice(root.length + 1)).join(', ')}`;
  const built = Math.min(...bundles.map((b) => statSync(b).mtimeMs));
  // The bundles hold the packages too: a change there makes them stale as well.
  const sources = Math.max(newestSource(join(root, 'services')), newestSource(join(root, 'packages')), newestSource(join(root, 'schemas')));
  return sources > built ? 'sources changed since the last build' : undefined;
}

export function ensureBundles(root: string, mode: 'auto' | 'always' | 'never'): string {
  const reason = mode === 'always' ? 'asked for (--build always)' : staleReason(root);
  if (reason === undefined) return 'dist bundles are current';
  if (mode === 'never') {
    if (reason.startsWith('missing')) throw new Error(`bundles ${reason}; run npm run build (or --build auto)`);
    return `dist bundles used as they are (${reason})`;
  }
  say('build', `npm run build (${reason})`);
  const result = spawnSync('npm', ['run', 'build'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  if (result.status !== 0) throw new Error(`npm run build failed (exit ${result.status})`);
  return `dist bundles rebuilt (${reason})`;
}

export interface StartedService {
  child: Child;
  opsUrl: string;
  /** What actually runs: a bundle that cannot start falls back to the sources. */
  source: 'dist' | 'tsx';
  note?: string;
}

export interface StartServiceOptions {
  name: ServiceName;
  source: 'dist' | 'tsx';
  root: string;
  env: Record<string, string | undefined>;
  opsPort: number;
  logDir: string;
  cleanup: Cleanup;
  onSpawn?: (pid: number) => void;
  /** Extra node flags, e.g. --cpu-prof. */
  nodeArgs?: string[];
  /** Name of the process and its log file when it differs from the service (a second processor). */
  logName?: string;
}

export async function startService(ctx: StartServiceOptions): Promise<StartedService> {
  try {
    return await startOnce(ctx, ctx.source);
  } catch (err) {
    const missing = ctx.source === 'dist' ? missingModule(join(ctx.logDir, `${ctx.logName ?? ctx.name}.log`)) : undefined;
    if (!missing) throw err;
    // The bundle keeps third-party packages external; one that npm nested under the
    // workspace (services/<name>/node_modules) cannot be found from dist/<name>/.
    const note = `${ctx.name}: the bundle cannot start (${missing}); measured from the sources through tsx instead`;
    say(ctx.name, note);
    return { ...(await startOnce(ctx, 'tsx')), note };
  }
}

async function startOnce(ctx: StartServiceOptions, source: 'dist' | 'tsx'): Promise<StartedService> {
  const name = ctx.logName ?? ctx.name;
  // The test kit's service harness, with what production runs: the bundle (or the sources as a
  // fallback) and the image's NODE_OPTIONS (Dockerfile).
  const service = await startServiceProcess({
    service: ctx.name,
    name,
    opsPort: ctx.opsPort,
    env: Object.fromEntries(Object.entries(ctx.env).filter((e): e is [string, string] => e[1] !== undefined)),
    entry: source,
    nodeArgs: ['--max-semi-space-size=64', ...(ctx.nodeArgs ?? [])],
    logFile: join(ctx.logDir, `${name}.log`),
    detached: true,
    readyTimeoutMs: 90_000,
    track: (p) => {
      ctx.onSpawn?.(p.pid);
      ctx.cleanup.add(`stop ${name} (pid ${p.pid})`, () => p.stop(20_000).then(() => undefined));
    },
  });
  return { child: asChild(service), opsUrl: service.opsUrl, source };
}

/** The bench's view of a child process. */
function asChild(service: ServiceProcess): Child {
  return {
    name: service.name,
    pid: service.pid,
    logFile: service.logFile,
    exited: service.exited,
    running: () => service.exitStatus() === undefined,
    stop: (graceMs = 20_000) => service.stop(graceMs).then(() => undefined),
  };
}

function missingModule(logFile: string): string | undefined {
  try {
    const log = readFileSync(logFile, 'utf8');
    if (!log.includes('ERR_MODULE_NOT_FOUND')) return undefined;
    return /Cannot find (?:package|module) '[^']+' imported from \S+/.exec(log)?.[0] ?? 'ERR_MODULE_NOT_FOUND';
  } catch {
    return undefined;
  }
}

export interface LogEntryCount {
  level: string;
  message: string;
  count: number;
}

/**
 * Warnings and errors a service logged during the run, grouped by message: pino JSON lines and
 * the @clickhouse/client's own `[time][LEVEL][@clickhouse/client][...] text` lines.
 */
export function summarizeLog(logFile: string): LogEntryCount[] {
  let text: string;
  try {
    text = readFileSync(logFile, 'utf8');
  } catch {
    return [];
  }
  const counts = new Map<string, LogEntryCount>();
  const add = (level: string, message: string) => {
    const key = `${level}\u0000${message}`;
    const entry = counts.get(key) ?? { level, message, count: 0 };
    entry.count++;
    counts.set(key, entry);
  };
  for (const line of text.split('\n')) {
    if (line.startsWith('{')) {
      try {
        const entry = JSON.parse(line) as { level?: string; msg?: string; err?: unknown };
        if (entry.level === 'warn' || entry.level === 'error' || entry.level === 'fatal') {
          const err = typeof entry.err === 'string' ? `: ${entry.err}` : '';
          add(entry.level, `${entry.msg ?? ''}${err}`.slice(0, 160));
        }
      } catch {
        // not JSON after all
      }
      continue;
    }
    const client = /^\[[^\]]+\]\[(WARN|ERROR)\]\[([^\]]+)\]\[[^\]]+\] ([^;.]*)/.exec(line);
    if (client) add(client[1]?.toLowerCase() ?? 'warn', `${client[2]}: ${client[3]}`.slice(0, 160));
  }
  return [...counts.values()].sort((a, b) => b.count - a.count);
}
