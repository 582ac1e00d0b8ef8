/**
 * A run that was killed outright (SIGKILL, OOM) cannot clean up after itself. Each run keeps a
 * small state file naming what it created; the next run removes what a dead run left behind.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { KafkaClient, Redis } from '@ingest/platform';
import { type ServerAddresses, teardown, type TeardownNames } from './environment.js';
import { commandLine, isAlive } from './proc-stats.js';
import { stopPid } from './processes.js';
import { say } from './say.js';

interface RunState extends TeardownNames {
  benchPid: number;
  startedAt: string;
  children: { pid: number; commandLine: string }[];
}

/** The command lines of a live run: `npm run bench` (pipeline.ts) and `npm run bench:tenants` (tenants.ts). */
const MARKERS = ['bench/src/pipeline', 'bench/src/tenants'];
const isBench = (pid: number) => MARKERS.some((m) => commandLine(pid).includes(m));

export interface RunStateFile {
  addChild(pid: number): void;
  remove(): void;
}

export function writeRunState(dir: string, runId: string, names: TeardownNames): RunStateFile {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${runId}.json`);
  const state: RunState = { ...names, benchPid: process.pid, startedAt: new Date().toISOString(), children: [] };
  const save = () => writeFileSync(file, `${JSON.stringify(state, null, 2)}\n`);
  save();
  return {
    addChild(pid) {
      state.children.push({ pid, commandLine: commandLine(pid) });
      save();
    },
    remove: () => rmSync(file, { force: true }),
  };
}

/** Other bench runs still alive (their figures and ours would disturb each other). */
export function liveRuns(dir: string): number[] {
  return states(dir)
    .filter(({ state }) => state.benchPid !== process.pid && isAlive(state.benchPid) && isBench(state.benchPid))
    .map(({ state }) => state.benchPid);
}

export async function removeLeftovers(dir: string, kafka: KafkaClient, redis: Redis, servers: ServerAddresses): Promise<void> {
  for (const { file, state } of states(dir)) {
    if (isAlive(state.benchPid) && isBench(state.benchPid)) continue;
    say('leftovers', `run ${state.startedAt} (pid ${state.benchPid}) died without cleaning up: removing what it left`);
    for (const child of state.children) {
      // Only a process whose command line is still the one recorded: pids get reused.
      if (child.commandLine !== '' && commandLine(child.pid) === child.commandLine) await stopPid(child.pid);
    }
    const problems = await teardown(state, kafka, redis, servers);
    for (const p of problems) say('leftovers', `could not remove ${p}`);
    if (problems.length === 0) rmSync(file, { force: true });
  }
}

function states(dir: string): { file: string; state: RunState }[] {
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  } catch {
    return [];
  }
  return files.flatMap((f) => {
    try {
      return [{ file: join(dir, f), state: JSON.parse(readFileSync(join(dir, f), 'utf8')) as RunState }];
    } catch {
      return [];
    }
  });
}
