import { describe, expect, it } from 'vitest';
import {
  type Command,
  EXIT_FAILED,
  EXIT_OK,
  EXIT_USAGE,
  HELP,
  InputError,
  parseCommandLine,
  parseNoArguments,
  runCommand,
  table,
  UsageError,
} from './frame.js';
import { runIngest } from './ingest.js';

function capture() {
  const out = { stdout: '', stderr: '' };
  return { out, io: { env: {}, stdout: (t: string) => void (out.stdout += t), stderr: (t: string) => void (out.stderr += t) } };
}

const echo: Command<{ word: string; loud: boolean }> = {
  usage: 'usage: echo <word> [--loud]\n',
  parse: (argv) => {
    const { values, positionals } = parseCommandLine(argv, { loud: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } });
    if (values.help || positionals[0] === 'help') return HELP;
    const [word] = positionals;
    if (word === undefined) throw new UsageError('echo needs <word>');
    return { word, loud: values.loud === true };
  },
  run: async ({ word, loud }, io) => {
    if (word === 'input') throw new InputError('ECHO_SETTING is not set');
    if (word === 'fail') throw new Error('broker down', { cause: new Error('ECONNREFUSED') });
    io.stdout(`${loud ? word.toUpperCase() : word}\n`);
    return EXIT_OK;
  },
};

describe('the CLI frame', () => {
  it('prints the usage on stdout for help, -h and --help, exit 0', async () => {
    for (const argv of [['help'], ['-h'], ['--help']]) {
      const { out, io } = capture();
      expect(await runCommand(echo, argv, io)).toBe(EXIT_OK);
      expect(out).toEqual({ stdout: echo.usage, stderr: '' });
    }
  });

  it('a wrong argument or unknown option: error, then the usage, on stderr, exit 2', async () => {
    for (const argv of [[], ['hi', '--quiet']]) {
      const { out, io } = capture();
      expect(await runCommand(echo, argv, io)).toBe(EXIT_USAGE);
      expect(out.stdout).toBe('');
      expect(out.stderr).toMatch(/^error: .+\n\nusage: echo/);
    }
  });

  it('wrong settings: the error alone, exit 2; a failure: the error and its cause, exit 1', async () => {
    const input = capture();
    expect(await runCommand(echo, ['input'], input.io)).toBe(EXIT_USAGE);
    expect(input.out.stderr).toBe('error: ECHO_SETTING is not set\n');
    const failed = capture();
    expect(await runCommand(echo, ['fail'], failed.io)).toBe(EXIT_FAILED);
    expect(failed.out.stderr).toBe('error: broker down (ECONNREFUSED)\n');
    const done = capture();
    expect(await runCommand(echo, ['hi', '--loud'], done.io)).toBe(EXIT_OK);
    expect(done.out.stdout).toBe('HI\n');
  });

  it('commands without arguments take help only', () => {
    expect(parseNoArguments('setup', [])).toBe('setup');
    expect(parseNoArguments('setup', ['help'])).toBe(HELP);
    expect(() => parseNoArguments('setup', ['now'])).toThrow(UsageError);
    expect(() => parseNoArguments('setup', ['--now'])).toThrow(UsageError);
  });

  it('pads table columns to the widest cell', () => {
    expect(
      table([
        ['ID', 'NAME'],
        ['acc_1', 'Acme'],
      ]),
    ).toBe('ID     NAME\nacc_1  Acme\n');
  });
});

describe('ingest', () => {
  it('lists its commands for help; an unknown command is a usage error (exit 2)', async () => {
    const help = capture();
    expect(await runIngest([], help.io)).toBe(EXIT_OK);
    expect(help.out.stdout).toContain('  credentials-key  ');
    const unknown = capture();
    expect(await runIngest(['nope'], unknown.io)).toBe(EXIT_USAGE);
    expect(unknown.out.stderr).toMatch(/^error: unknown command "nope"\n\nusage: ingest/);
  });

  it('each command answers its own help through the frame', async () => {
    for (const [name, expected] of [
      ['admin', 'keys create'],
      ['deadletters', 'replay --offset'],
      ['credentials-key', 'rotate --to-public-key'],
      ['setup', 'usage: ingest setup'],
      ['healthcheck', 'usage: ingest healthcheck'],
    ] as const) {
      const { out, io } = capture();
      expect(await runIngest([name, 'help'], io), name).toBe(EXIT_OK);
      expect(out.stdout, name).toContain(expected);
    }
  });

  it('credentials-key: a wrong argument is a usage error in the common form', async () => {
    const { out, io } = capture();
    expect(await runIngest(['credentials-key', 'generate'], io)).toBe(EXIT_USAGE);
    expect(out.stderr).toMatch(/^error: generate needs --out-dir\n\nusage: npm run credentials-key/);
  });
});
