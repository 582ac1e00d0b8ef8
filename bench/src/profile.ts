/**
 * `--profile`: the services run with `node --cpu-prof`, which writes a .cpuprofile when they
 * exit; this reads it and attributes the sampled CPU time to packages and functions, so a slow
 * stage points at its code without touching the product.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
}

export interface ProfileSummary {
  file: string;
  /** Sampled seconds with the thread busy (not idle). */
  busySeconds: number;
  byPackage: { name: string; percent: number }[];
  topFunctions: { name: string; percent: number }[];
}

/**
 * One directory per service: node writes one profile per thread (tsx's module loader runs in a
 * worker of its own), and the main thread's is the largest.
 */
export function cpuProfileArgs(dir: string, name: string): string[] {
  return ['--cpu-prof', `--cpu-prof-dir=${join(dir, `${name}-cpuprofile`)}`];
}

export function summarizeProfile(dir: string, name: string, top = 12): ProfileSummary | undefined {
  const profileDir = join(dir, `${name}-cpuprofile`);
  let files: string[];
  try {
    files = readdirSync(profileDir).filter((f) => f.endsWith('.cpuprofile'));
  } catch {
    return undefined;
  }
  const file = files.map((f) => join(profileDir, f)).sort((a, b) => statSync(b).size - statSync(a).size)[0];
  if (!file) return undefined;
  const profile = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const secondsPerSample = (profile.endTime - profile.startTime) / 1e6 / Math.max(1, profile.samples.length);
  const packages = new Map<string, number>();
  const functions = new Map<string, number>();
  let busy = 0;
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0 || node.callFrame.functionName === '(idle)') continue;
    busy += hits;
    const pkg = packageOf(node.callFrame.url, node.callFrame.functionName);
    packages.set(pkg, (packages.get(pkg) ?? 0) + hits);
    const fn = `${node.callFrame.functionName || '(anonymous)'} ${shortUrl(node.callFrame.url)}:${node.callFrame.lineNumber + 1}`;
    functions.set(fn, (functions.get(fn) ?? 0) + hits);
  }
  const rank = (m: Map<string, number>, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([k, v]) => ({ name: k, percent: (v / Math.max(1, busy)) * 100 }));
  return { file, busySeconds: busy * secondsPerSample, byPackage: rank(packages, 10), topFunctions: rank(functions, top) };
}

function packageOf(url: string, functionName: string): string {
  if (url === '') return functionName.startsWith('(') ? functionName : '(native)';
  const nm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (nm?.[1]) return nm[1];
  if (url.startsWith('node:')) return 'node core';
  if (/\/dist\/[^/]+\/main\.js$/.test(url)) return 'our code (bundle)';
  if (/\/(services|schemas)\//.test(url)) return 'our code';
  return shortUrl(url);
}

function shortUrl(url: string): string {
  return url
    .replace(/^file:\/\//, '')
    .replace(/^.*\/node_modules\//, '')
    .replace(/^.*\/(services|schemas|dist)\//, '$1/');
}
