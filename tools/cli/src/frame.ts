/**
 * The one frame of `ingest` and its commands (admin, deadletters, credentials-key, setup,
 * healthcheck), so each command is only its parsing, its work and its output:
 * - arguments are read by node:util's parseArgs (strict: an unknown option is an error);
 *   `help`, `--help` and `-h` print the command's usage on stdout;
 * - results go to stdout (text, or JSON under --json where a command offers it); diagnostics go
 *   to stderr as `error: <message>`, a wrong argument followed by the usage;
 * - exit codes: 0 done, 1 failed (the API, Kafka, a file: whatever the command talks to),
 *   2 usage (wrong arguments or settings: nothing was done).
 */
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';

export interface Io {
  env: Record<string, string | undefined>;
  stdout(text: string): void;
  stderr(text: string): void;
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** Wrong arguments: the message is printed with the usage, exit code 2. */
export class UsageError extends Error {}

/** Wrong settings or input files (nothing was done): the message alone, exit code 2. */
export class InputError extends Error {}

/** parseArgs as every command uses it: options and positionals, strict, its errors as UsageError. */
export function parseCommandLine<O extends ParseArgsOptionsConfig>(argv: readonly string[], options: O) {
  try {
    return parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(err instanceof Error ? err.message : String(err));
  }
}

export const HELP = 'help';

/** `help`, `--help` or `-h` where a command's name would be. */
export const isHelp = (word: string | undefined) => word === undefined || word === 'help' || word === '--help' || word === '-h';

/** The parse of a command that takes no arguments (its settings come from the environment). */
export function parseNoArguments<Name extends string>(name: Name, argv: readonly string[]): Name | typeof HELP {
  const { values, positionals } = parseCommandLine(argv, { help: { type: 'boolean', short: 'h' } });
  if (values.help || positionals[0] === 'help') return HELP;
  if (positionals.length > 0) throw new UsageError(`${name} takes no arguments (got ${positionals.join(' ')})`);
  return name;
}

export interface Command<Parsed, CommandIo extends Io = Io> {
  /** Printed for help (stdout) and after a wrong argument (stderr); ends with a newline. */
  usage: string;
  /** The invocation, or HELP; throws UsageError for wrong arguments. */
  parse(argv: readonly string[]): Parsed | typeof HELP;
  /** Does the work; resolves to the exit code. A thrown error is reported as `error: …`, exit 1 (InputError: 2). */
  run(parsed: Parsed, io: CommandIo): Promise<number>;
}

export async function runCommand<Parsed, CommandIo extends Io>(command: Command<Parsed, CommandIo>, argv: readonly string[], io: CommandIo): Promise<number> {
  let parsed: Parsed | typeof HELP;
  try {
    parsed = command.parse(argv);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    io.stderr(`error: ${err.message}\n\n${command.usage}`);
    return EXIT_USAGE;
  }
  if (parsed === HELP) {
    io.stdout(command.usage);
    return EXIT_OK;
  }
  try {
    return await command.run(parsed, io);
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`error: ${err.message}\n\n${command.usage}`);
      return EXIT_USAGE;
    }
    io.stderr(`error: ${describeError(err)}\n`);
    return err instanceof InputError ? EXIT_USAGE : EXIT_FAILED;
  }
}

/** An error's message and its cause's when that adds something (fetch's own message is just "fetch failed"). */
export function describeError(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const cause = err instanceof Error ? err.cause : undefined;
  return cause instanceof Error && cause.message && !message.includes(cause.message) ? `${message} (${cause.message})` : message;
}

/** Columns padded to their widest cell, two spaces apart; the first row is the heading. */
export function table(rows: string[][]): string {
  const widths = rows[0]?.map((_, col) => Math.max(...rows.map((r) => (r[col] ?? '').length))) ?? [];
  const lines = rows.map((r) => r.map((cell, col) => (col === r.length - 1 ? cell : cell.padEnd(widths[col] ?? 0))).join('  '));
  return `${lines.join('\n')}\n`;
}
