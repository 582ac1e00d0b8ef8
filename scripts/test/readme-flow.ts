/**
 * The README's flow as data, for scripts/test/readme-flow.integration.test.ts: what `npm start`
 * printed (parsed from its real output), what the README says it prints, and the commands of the
 * README's "Sending an event" section. Pure functions, unit-tested in readme-flow.test.ts.
 */

/** What the summary of `npm start` offers: its addresses, the demo account and every command. */
export interface Printout {
  /** The summary from "Running:" to the admin CLI command, continuation lines joined, blank lines left out. */
  lines: string[];
  gatewayUrl: string;
  /** The console's dashboard, as its summary line names it (…/dashboard/). */
  consoleUrl: string;
  adminUrl: string;
  clickhouseUrl: string;
  database: string;
  accountId: string;
  apiKey: string;
  /** The "Try it:" commands, as printed (continuations joined). */
  tryIt: string[];
  dashboardUrl: string;
  email: string;
  password: string;
  adminCommand: string;
}

/** Lines with shell continuations (` \` at the end) joined into one, blank lines left out. */
export function joinContinuations(lines: readonly string[]): string[] {
  const joined: string[] = [];
  let pending = '';
  for (const line of lines) {
    const text = pending ? `${pending} ${line.trim()}` : line;
    if (/\s\\$/.test(text)) pending = text.replace(/\s*\\$/, '');
    else {
      pending = '';
      if (text.trim() !== '') joined.push(text);
    }
  }
  if (pending) joined.push(pending);
  return joined;
}

function after(lines: readonly string[], header: RegExp, what: string): string {
  const i = lines.findIndex((l) => header.test(l));
  const next = i >= 0 ? lines[i + 1] : undefined;
  if (next === undefined) throw new Error(`npm start printed no ${what} (no line after ${header})`);
  return next.trim();
}

function field(text: string, pattern: RegExp, what: string): string[] {
  const m = pattern.exec(text);
  if (!m) throw new Error(`npm start printed no ${what} (${pattern})`);
  return m.slice(1).map((g) => g ?? '');
}

export function parsePrintout(output: string): Printout {
  const all = output.split('\n');
  const start = all.findIndex((l) => l.trim() === 'Running:');
  const adminHeader = all.findIndex((l, i) => i > start && /^Admin CLI \(/.test(l));
  if (start < 0 || adminHeader < 0) throw new Error('npm start printed no summary ("Running:" … "Admin CLI (…")');
  const lines = joinContinuations(all.slice(start, adminHeader + 2));
  const text = lines.join('\n');
  const tryFrom = lines.findIndex((l) => l === 'Try it:');
  const tryTo = lines.findIndex((l) => /^Dashboard \(/.test(l));
  const [clickhouseUrl = '', database = ''] = field(text, /^ {2}ClickHouse +(http\S+) +\(database (\S+)\)$/m, 'ClickHouse address');
  const [accountId = '', apiKey = ''] = field(text, /^Demo account (\S+) \(plan \w+\), API key:\n {2}(\S+)$/m, 'demo account and key');
  const [email = ''] = field(text, /^ {2}email +(\S+)$/m, 'dashboard email');
  const [password = ''] = field(text, /^ {2}password +(\S+)$/m, 'dashboard password');
  return {
    lines,
    gatewayUrl: field(text, /^ {2}gateway +(http\S+) +\(API;/m, 'gateway address')[0] ?? '',
    consoleUrl: field(text, /^ {2}console +(http\S+\/dashboard\/) +\(dashboard\)$/m, 'console address')[0] ?? '',
    adminUrl: field(text, /^ {2}console +admin (http\S+) /m, 'admin API address')[0] ?? '',
    clickhouseUrl,
    database,
    accountId,
    apiKey,
    tryIt: tryFrom >= 0 && tryTo > tryFrom ? lines.slice(tryFrom + 1, tryTo).map((l) => l.trim()) : [],
    dashboardUrl: after(lines, /^Dashboard \(/, 'dashboard address'),
    email,
    password,
    adminCommand: after(lines, /^Admin CLI \(/, 'admin CLI command'),
  };
}

/** The lines of the first fenced code block after the line that contains `marker`. */
export function codeBlockAfter(markdown: string, marker: string): string[] {
  const lines = markdown.split('\n');
  const at = lines.findIndex((l) => l.includes(marker));
  const open = lines.findIndex((l, i) => i > at && l.startsWith('```'));
  const close = lines.findIndex((l, i) => i > open && l.startsWith('```'));
  if (at < 0 || open < 0 || close < 0) throw new Error(`README: no code block after "${marker}"`);
  return lines.slice(open + 1, close);
}

/**
 * How the README's lines differ from the printout, line for line (`…` stands for anything, runs
 * of spaces for any spaces); empty when they agree. `printed` is already normalised to the
 * README's defaults (ports, paths). A line only one side has is named as such, so one missing
 * line is one message.
 */
export function printoutDrift(readme: readonly string[], printed: readonly string[]): string[] {
  const wanted = joinContinuations(readme).map((l) => l.trim());
  const real = printed.map((l) => l.trim());
  const matches = (doc: string | undefined, line: string | undefined) =>
    doc !== undefined &&
    line !== undefined &&
    new RegExp(
      `^${doc
        .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
        .replace(/…/g, '.*')
        .replace(/ +/g, ' +')}$`,
    ).test(line);
  const drift: string[] = [];
  let i = 0;
  let j = 0;
  while (i < wanted.length || j < real.length) {
    if (matches(wanted[i], real[j])) {
      i++;
      j++;
    } else if (j < real.length && (i >= wanted.length || matches(wanted[i], real[j + 1]))) {
      drift.push(`npm start prints a line the README does not show: ${JSON.stringify(real[j])}`);
      j++;
    } else if (i < wanted.length && (j >= real.length || matches(wanted[i + 1], real[j]))) {
      drift.push(`the README shows a line npm start does not print: ${JSON.stringify(wanted[i])}`);
      i++;
    } else {
      drift.push(`README ${JSON.stringify(wanted[i])} but npm start prints ${JSON.stringify(real[j])}`);
      i++;
      j++;
    }
  }
  return drift;
}

/** A step of a README shell block: a variable it asks the reader to set, or a command with the output shown below it. */
export type ShellStep = { kind: 'set'; name: string } | { kind: 'run'; command: string; shown?: string };

export function shellSteps(block: readonly string[]): ShellStep[] {
  const steps: ShellStep[] = [];
  for (const line of joinContinuations(block)) {
    const text = line.trim();
    const set = /^([A-Z_]+)=\S+(\s+#.*)?$/.exec(text);
    const last = steps.at(-1);
    if (set?.[1]) steps.push({ kind: 'set', name: set[1] });
    else if (text.startsWith('# {') && last?.kind === 'run') last.shown = text.slice(2);
    else if (!text.startsWith('#')) steps.push({ kind: 'run', command: text });
  }
  return steps;
}

/**
 * The literal `"key":value` pairs of an output shown in the README (`…` elided values need only
 * their key): each must appear in the real answer. Returns the ones missing.
 */
export function missingShownPairs(shown: string, body: string): string[] {
  const missing: string[] = [];
  for (const m of shown.matchAll(/"(\w+)":("(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null|\[|\{)/g)) {
    const [pair = '', key = '', value = ''] = m;
    const literal = !value.includes('…') && value !== '[' && value !== '{';
    if (literal ? !body.includes(pair) : !body.includes(`"${key}":`)) missing.push(literal ? pair : `"${key}":…`);
  }
  return missing;
}

/** The paths of the dashboard's pages, from the PAGES list of its App.tsx (pages marked `soon` are not linked). */
export function dashboardPages(appTsx: string): string[] {
  const list = /const PAGES = \[([\s\S]*?)\] as const;/.exec(appTsx)?.[1];
  if (list === undefined) throw new Error('App.tsx: no `const PAGES = [...] as const`');
  return [...list.matchAll(/\{ path: '([^']+)'[^}]*\}/g)].filter((m) => !m[0].includes('soon')).map((m) => m[1] ?? '');
}
