/**
 * CPU time and memory of processes, read from Linux /proc. CPU is cumulative (utime + stime),
 * so a figure for a window is the difference of two snapshots.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';

let clockTicks: number | undefined;

function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** utime + stime of a process in seconds, or undefined when it is gone. */
export function cpuSeconds(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may contain spaces and parentheses: count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[0] is field 3 (state); utime and stime are fields 14 and 15.
    return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
  } catch {
    return undefined;
  }
}

export interface Memory {
  rssBytes: number;
  /** Peak resident set size since the process started (VmHWM). */
  peakRssBytes: number;
}

export function memory(pid: number): Memory | undefined {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN) * 1024;
    return { rssBytes: kb('VmRSS'), peakRssBytes: kb('VmHWM') };
  } catch {
    return undefined;
  }
}

export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
  } catch {
    return '';
  }
}

export function isAlive(pid: number): boolean {
  return existsSync(`/proc/${pid}`);
}

/** The pid in a pid file when that process is alive and its command line contains `marker`. */
export function pidFromFile(file: string, marker: string): number | undefined {
  try {
    const pid = Number(readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 && commandLine(pid).includes(marker) ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** Busy and total CPU seconds of the whole machine (all cores), from /proc/stat. */
export function machineCpu(): { busy: number; total: number } {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '';
  const [, ...values] = line.trim().split(/\s+/);
  const n = values.map(Number);
  const total = n.slice(0, 8).reduce((a, b) => a + b, 0);
  // idle + iowait are not busy.
  const idle = (n[3] ?? 0) + (n[4] ?? 0);
  return { busy: (total - idle) / ticksPerSecond(), total: total / ticksPerSecond() };
}

export type Pids = Record<string, number | undefined>;

export interface ProcSnapshot {
  atMs: number;
  cpu: Record<string, number | undefined>;
  memory: Record<string, Memory | undefined>;
  /** CPU of this bench process (the load generator), seconds. */
  selfCpu: number;
  machine: { busy: number; total: number };
}

export function procSnapshot(pids: Pids): ProcSnapshot {
  const cpu: Record<string, number | undefined> = {};
  const mem: Record<string, Memory | undefined> = {};
  for (const [name, pid] of Object.entries(pids)) {
    cpu[name] = pid === undefined ? undefined : cpuSeconds(pid);
    mem[name] = pid === undefined ? undefined : memory(pid);
  }
  const self = process.cpuUsage();
  return { atMs: Date.now(), cpu, memory: mem, selfCpu: (self.user + self.system) / 1e6, machine: machineCpu() };
}

export function cpuDelta(before: ProcSnapshot, after: ProcSnapshot, name: string): number | undefined {
  const a = before.cpu[name];
  const b = after.cpu[name];
  return a === undefined || b === undefined ? undefined : b - a;
}
