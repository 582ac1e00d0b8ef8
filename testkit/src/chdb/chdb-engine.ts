import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { type ClickHouse, literal, REPO_ROOT } from '@ingest/platform';

/**
 * ClickHouse's engine in-process (chdb, from PyPI) for the current-engine tests
 * (docs/clickhouse.md, "Current-engine tests"): one long-lived Python process per engine and test
 * file (scripts/chdb/runner.py), fed statements over stdin. It checks SQL, DDL and input/output
 * formats on a current engine; it has no HTTP server, so the client protocol is not checked.
 */

/** The engines scripts/chdb/install.sh installs: the newest, and the oldest current server supported. */
export const CHDB_ENGINES = [
  { name: 'chdb-core-26.9.0', serverMajor: 26 },
  { name: 'chdb-2.1.1', serverMajor: 24 },
] as const;

export type ChdbEngineName = (typeof CHDB_ENGINES)[number]['name'];

export interface ChdbEngine {
  readonly name: ChdbEngineName;
  /** Runs one statement (its exact UTF-8 bytes) and returns the exact bytes of the answer. */
  run(statement: string | Buffer, format?: string): Promise<Buffer>;
  /** The answer as text. */
  text(statement: string, format?: string): Promise<string>;
  close(): Promise<void>;
}

interface Reply {
  ok: boolean;
  out?: string;
  error?: string;
}

/** scripts/chdb/install.sh installs under STACK_DIR (default .local), like the other tools. */
function stackDir(): string {
  return resolve(REPO_ROOT, process.env.STACK_DIR ?? '.local');
}

export async function startChdb(name: ChdbEngineName): Promise<ChdbEngine> {
  const python = join(stackDir(), 'chdb', name, 'bin', 'python');
  if (!existsSync(join(stackDir(), 'chdb', name, '.installed'))) {
    throw new Error(`the ${name} engine is not installed: run \`bash scripts/chdb/install.sh\` (npm test does)`);
  }
  const dir = await mkdtemp(join(tmpdir(), `chdb-${name}-`));
  const child: ChildProcessWithoutNullStreams = spawn(python, [join(REPO_ROOT, 'scripts', 'chdb', 'runner.py'), join(dir, 'session')], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    stderr = (stderr + d.toString()).slice(-4000);
  });
  const waiting: { resolve(r: Reply): void; reject(e: Error): void }[] = [];
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.once('exit', (code) => {
    for (const w of waiting.splice(0)) w.reject(new Error(`${name} runner exited (${code}): ${stderr}`));
  });
  createInterface({ input: child.stdout }).on('line', (line) => waiting.shift()?.resolve(JSON.parse(line) as Reply));
  // One statement at a time, in order: the runner answers in the order it reads.
  let chain: Promise<unknown> = Promise.resolve();
  const run = (statement: string | Buffer, format = 'TabSeparated'): Promise<Buffer> => {
    const bytes = typeof statement === 'string' ? Buffer.from(statement) : statement;
    const next = chain.then(
      () =>
        new Promise<Reply>((resolve, reject) => {
          waiting.push({ resolve, reject });
          child.stdin.write(`${JSON.stringify({ sql: bytes.toString('base64'), format })}\n`);
        }),
    );
    chain = next.catch(() => undefined);
    return next.then((r) => {
      if (!r.ok) throw new Error(`${name}: ${r.error ?? 'failed'}\n  statement: ${bytes.toString().slice(0, 500)}`);
      return Buffer.from(r.out ?? '', 'base64');
    });
  };
  return {
    name,
    run,
    text: async (statement, format) => (await run(statement, format)).toString(),
    async close() {
      child.stdin.end();
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The services' ClickHouse surface on a chdb engine, sending what @clickhouse/client sends over
 * HTTP: the same statement text, `INSERT INTO t (cols) FORMAT TabSeparated` followed by the
 * writer's exact lines, `INSERT INTO t FORMAT JSONEachRow` followed by one JSON object a line.
 * Every table name is resolved in `database` (a `USE` first).
 */
export async function chdbClickHouse(engine: ChdbEngine, database: string): Promise<ClickHouse> {
  await engine.run(`CREATE DATABASE IF NOT EXISTS ${database}`);
  await engine.run(`USE ${database}`);
  const ch: ClickHouse = {
    name: 'clickhouse',
    database,
    async insert(table, rows) {
      if (rows.length === 0) return;
      await engine.run(`INSERT INTO ${table} FORMAT JSONEachRow\n${rows.map((r) => JSON.stringify(r)).join('\n')}\n`);
    },
    async insertTabSeparated(table, columns, lines) {
      if (lines.length === 0) return;
      const data = `${lines.join('\n')}\n`;
      if (engine.name === 'chdb-2.1.1' && data.includes('\0')) {
        // chdb 2.x passes the statement as a C string, so a NUL ends an INSERT's inline data
        // (over HTTP the body is binary-safe). The same bytes go through the same TabSeparated
        // parser from a string literal instead.
        const types = await ch.query<{ name: string; type: string }>(
          `SELECT name, type FROM system.columns WHERE database = currentDatabase() AND table = ${literal(table)}`,
        );
        const typeOf = new Map(types.map((t) => [t.name, t.type]));
        const structure = columns.map((c) => `${c} ${typeOf.get(c) ?? 'String'}`).join(', ');
        await engine.run(`INSERT INTO ${table} (${columns.join(', ')}) SELECT * FROM format(TabSeparated, ${literal(structure)}, ${literal(data)})`);
        return;
      }
      await engine.run(Buffer.concat([Buffer.from(`INSERT INTO ${table} (${columns.join(', ')}) FORMAT TabSeparated\n`), Buffer.from(data)]));
    },
    async query<T>(query: string) {
      const out = (await engine.run(query, 'JSONEachRow')).toString();
      return out
        .split('\n')
        .filter((l) => l.length > 0)
        .map((l) => JSON.parse(l) as T);
    },
    async command(query) {
      await engine.run(query);
    },
    ping: () => Promise.resolve(true),
    close: () => Promise.resolve(),
  };
  return ch;
}
