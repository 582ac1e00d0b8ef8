import { randomUUID } from 'node:crypto';
import { createAuditWriter, loadErasedCheck, toAuditRecord } from '@ingest/domain';
import {
  allTopicSpecs,
  CommonConfig,
  createLogger,
  createProducer,
  type DeadLetterEntry,
  type DeadLetterSelection,
  earlierReplays,
  entryPosition,
  errorMessage,
  KafkaConfig,
  type KafkaClient,
  loadConfig,
  type Logger,
  matchesSelection,
  openKafkaClientFromConfig,
  planReplay,
  type Producer,
  readDeadLetters,
  replayDeadLetters,
  topicName,
} from '@ingest/platform';
import { type Static, Type } from '@sinclair/typebox';
import { formatList, formatReplayPlan, listJson, printable, replayJson } from './format.js';
import { hostName, operatorName, replayAuditEntries } from './replay-audit.js';
import {
  type Command as FrameCommand,
  EXIT_FAILED,
  EXIT_OK,
  EXIT_USAGE,
  HELP,
  InputError,
  type Io,
  parseCommandLine,
  runCommand,
  UsageError,
} from '../frame.js';

/**
 * The dead-letter CLI (`npm run deadletters -- <command>`): lists the dead-letter topic and
 * replays entries to the topics they failed on. Parsing and output are pure functions;
 * `runCli` wires them to Kafka and the terminal, so tests drive it in-process with their own
 * environment as well as through the real entry point.
 */
export type Command =
  | { kind: 'help' }
  | { kind: 'list'; code?: string; limit: number; json: boolean; showValues: boolean; crm?: true }
  | { kind: 'replay'; selection: DeadLetterSelection; yes: boolean; json: boolean; crm?: true };

export { UsageError };

export const DEFAULT_LIST_LIMIT = 50;
export const MAX_LIST_LIMIT = 10_000;

export const USAGE = `usage: npm run deadletters -- <command> [options]

commands:
  list [--code <code>] [--limit <n>] [--json] [--show-values] [--crm]
      list dead letters, oldest first (default limit ${DEFAULT_LIST_LIMIT}); keys and values are
      shown as sizes unless --show-values is given
  replay --offset <partition>/<offset> [<partition>/<offset> ...] [--json]
      send these dead letters back to the topic they failed on
  replay --code <code> [--yes] [--json]
      send every dead letter with this code back; without --yes only shows what it would send
  help
      this text

--crm works on the CRM sink's dead letters (crm.deadletter) instead of events.deadletter; its
replays go to crm.replay, which only the crm-sink reads (storage is not touched again, and the
sink's ledger keeps a replayed event from applying increments or activities twice).

Each replay is written to the audit log (action dead_letter.replay, one record per account: who
(INGEST_OPERATOR, else the OS user), the host, the topics, count, selection, positions and event
ids; never keys or values). The replay itself is not remembered: replaying an entry again sends
another copy (consumers deduplicate by eventId). A replayed message carries a dlq-replayed-from
header naming its dead letter.

exit codes: 0 done, 1 failed (Kafka, unknown or unreplayable entries, or the replay was made
but the audit log could not record it: the record is printed on stderr), 2 usage

environment:
  KAFKA_BROKERS       brokers (default 127.0.0.1:9092)
  KAFKA_TOPIC_PREFIX  topic prefix of the deployment (default none)
  LOG_LEVEL           client log level on stderr (default warn)
  INGEST_OPERATOR     who runs the replay, named in the audit log (default: the OS user name)
`;

const POSITION = /^(\d{1,9})\/(\d{1,19})$/;
const CODE = /^[A-Za-z0-9_.-]{1,100}$/;

export function parseInvocation(argv: readonly string[]): Command {
  const { values, positionals } = parseCommandLine(argv, OPTIONS);
  const [command, ...rest] = positionals;
  if (values.help || command === undefined || command === 'help') return { kind: 'help' };

  const allow = (...flags: (keyof typeof values)[]) => {
    for (const [flag, value] of Object.entries(values)) {
      if (value !== undefined && flag !== 'help' && !flags.includes(flag as keyof typeof values)) {
        throw new UsageError(`--${flag} does not apply to "${command}"`);
      }
    }
  };

  switch (command) {
    case 'list': {
      allow('code', 'limit', 'json', 'show-values', 'crm');
      if (rest.length > 0) throw new UsageError(`"list" takes no arguments (got ${rest.join(' ')})`);
      return {
        kind: 'list',
        ...(values.code !== undefined ? { code: code(values.code) } : {}),
        limit: limit(values.limit),
        json: values.json === true,
        showValues: values['show-values'] === true,
        ...(values.crm === true ? { crm: true as const } : {}),
      };
    }
    case 'replay': {
      allow('offset', 'code', 'yes', 'json', 'crm');
      const crm = values.crm === true ? { crm: true as const } : {};
      const offsets = [...(values.offset ?? []), ...rest];
      if (values.code !== undefined && offsets.length > 0) throw new UsageError('replay takes either --offset or --code, not both');
      if (values.code !== undefined)
        return { kind: 'replay', selection: { code: code(values.code) }, yes: values.yes === true, json: values.json === true, ...crm };
      if (values.offset === undefined) throw new UsageError('replay needs --offset <partition>/<offset> or --code <code>');
      return { kind: 'replay', selection: { positions: positions(offsets) }, yes: values.yes === true, json: values.json === true, ...crm };
    }
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

const OPTIONS = {
  code: { type: 'string' },
  limit: { type: 'string' },
  offset: { type: 'string', multiple: true },
  yes: { type: 'boolean', short: 'y' },
  json: { type: 'boolean' },
  'show-values': { type: 'boolean' },
  crm: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

function code(value: string): string {
  if (!CODE.test(value)) throw new UsageError(`--code must be a code word such as invalid_json (got "${value}")`);
  return value;
}

function limit(value: string | undefined): number {
  if (value === undefined) return DEFAULT_LIST_LIMIT;
  if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > MAX_LIST_LIMIT) {
    throw new UsageError(`--limit must be a whole number from 1 to ${MAX_LIST_LIMIT} (got "${value}")`);
  }
  return Number(value);
}

/** `0/12`, several as separate arguments or comma-separated; duplicates collapse. */
export function positions(values: readonly string[]): string[] {
  const out = new Set<string>();
  for (const value of values.flatMap((v) => v.split(','))) {
    const match = POSITION.exec(value.trim());
    if (!match) throw new UsageError(`--offset must look like <partition>/<offset>, e.g. 0/12 (got "${value}")`);
    // Normalised (no leading zeros) so it compares equal to the positions read from Kafka.
    out.add(`${Number(match[1])}/${BigInt(match[2] ?? '0').toString()}`);
  }
  return [...out];
}

export const DeadLettersConfigSchema = Type.Object({
  ...KafkaConfig,
  /** The audit log's actor for replays: the CLI has no admin token to name one. */
  INGEST_OPERATOR: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: '^[^\\s]+$' })),
  // A CLI keeps the client's chatter off the terminal unless asked.
  LOG_LEVEL: Type.Union(CommonConfig.LOG_LEVEL.anyOf, { default: 'warn' }),
});
export type DeadLettersConfig = Static<typeof DeadLettersConfigSchema>;

export type CliIo = Io;

/** Every entry of a replay selection, however many (they are all to be sent). */
const NO_LIMIT = Number.MAX_SAFE_INTEGER;

export const DEADLETTERS_COMMAND: FrameCommand<Exclude<Command, { kind: 'help' }>> = {
  usage: USAGE,
  parse: (argv) => {
    const command = parseInvocation(argv);
    return command.kind === 'help' ? HELP : command;
  },
  run: async (command, io) => {
    let config: DeadLettersConfig;
    try {
      config = loadConfig(DeadLettersConfigSchema, io.env);
    } catch (err) {
      throw new InputError(errorMessage(err));
    }
    const logger = createLogger({ service: 'deadletters', level: config.LOG_LEVEL, destination: { write: (line: string) => io.stderr(line) } });
    const prefix = config.KAFKA_TOPIC_PREFIX;
    const kafka = await openKafkaClientFromConfig(config, 'deadletters', logger);
    const operator = operatorName(config.INGEST_OPERATOR);
    const ctx: Context = command.crm
      ? { kafka, logger, io, prefix, operator, topic: topicName(prefix, 'crmDeadLetters'), replayTopic: topicName(prefix, 'crmReplay') }
      : { kafka, logger, io, prefix, operator, topic: topicName(prefix, 'deadLetters') };
    return command.kind === 'list' ? await list(ctx, command) : await replay(ctx, command);
  },
};

/** Runs one invocation; resolves to the exit code (0 done, 1 failed, 2 usage). */
export const runCli = (argv: readonly string[], io: CliIo): Promise<number> => runCommand(DEADLETTERS_COMMAND, argv, io);

interface Context {
  kafka: KafkaClient;
  logger: Logger;
  io: CliIo;
  prefix: string;
  /** Who the audit log names for a replay. */
  operator: string;
  topic: string;
  /** Where replays go instead of each letter's source topic (CRM dead letters: crm.replay). */
  replayTopic?: string;
}

async function list(ctx: Context, command: Extract<Command, { kind: 'list' }>): Promise<number> {
  const { code } = command;
  // One more than shown tells whether there are more.
  const found = await readDeadLetters(ctx.kafka, ctx.topic, {
    limit: command.limit + 1,
    ...(code !== undefined ? { filter: (e: DeadLetterEntry) => e.code === code } : {}),
    logger: ctx.logger,
  });
  const output = {
    topic: ctx.topic,
    entries: found.slice(0, command.limit),
    truncated: found.length > command.limit,
    ...(code !== undefined ? { code } : {}),
    showValues: command.showValues,
  };
  ctx.io.stdout(command.json ? listJson(output) : formatList(output));
  return EXIT_OK;
}

async function replay(ctx: Context, command: Extract<Command, { kind: 'replay' }>): Promise<number> {
  const { io } = ctx;
  const selected = matchesSelection(command.selection);
  // Letters that are themselves failed replays are read too, to warn about replaying again.
  const read = await readDeadLetters(ctx.kafka, ctx.topic, { limit: NO_LIMIT, filter: (e) => selected(e) || e.replayedFrom !== null, logger: ctx.logger });
  const selectedEntries = read.filter(selected);
  // Events of erased people and companies are not replayed (docs/erasure.md).
  const erased = await loadErasedCheck(ctx.kafka, topicName(ctx.prefix, 'erasures'), ctx.logger);
  const entries = selectedEntries.filter((e) => !erased(e.value));
  const withheld = selectedEntries.length - entries.length;
  if (withheld > 0) io.stderr(`note: ${withheld} selected dead letters hold events of erased people or companies; they are not replayed\n`);

  if ('positions' in command.selection) {
    const found = new Set(selectedEntries.map(entryPosition));
    const missing = command.selection.positions.filter((p) => !found.has(p));
    if (missing.length > 0) {
      io.stderr(`error: no dead letter at ${missing.join(', ')} in ${printable(ctx.topic)}; nothing was replayed (see "list")\n`);
      return EXIT_FAILED;
    }
  } else if (entries.length === 0) {
    io.stdout(command.json ? replayJson([], false) : `no dead letters with code ${command.selection.code} in ${printable(ctx.topic)}; nothing to replay\n`);
    return EXIT_OK;
  }

  if (entries.length === 0) {
    io.stdout(command.json ? replayJson([], false) : 'every selected dead letter is of an erased person or company; nothing to replay\n');
    return EXIT_OK;
  }

  const plan = planReplay(entries, { deadLetterTopic: ctx.topic, allowedTopics: allTopicSpecs().map((s) => ctx.prefix + s.name) });
  if (plan.refused.length > 0) {
    for (const r of plan.refused) io.stderr(`error: ${entryPosition(r.entry)} cannot be replayed: ${printable(r.reason)}\n`);
    io.stderr('nothing was replayed\n');
    return EXIT_FAILED;
  }

  // The source topic still had to be one of the deployment's (checked above); only the target changes.
  if (ctx.replayTopic !== undefined) plan.byTopic = new Map([[ctx.replayTopic, entries]]);

  for (const [origin, again] of earlierReplays(entries, read, ctx.topic)) {
    io.stderr(`warning: ${origin} was replayed before and failed again (as ${again.map(entryPosition).join(', ')}); replaying it sends another copy\n`);
  }

  if ('code' in command.selection && !command.yes) {
    io.stdout(command.json ? replayJson(entries, false) : formatReplayPlan(entries, 'would replay'));
    io.stderr(`nothing was replayed: add --yes to replay these ${entries.length} dead letters\n`);
    return EXIT_USAGE;
  }

  const producer = createProducer(ctx.kafka);
  await producer.connect();
  let audited: boolean;
  const requestId = randomUUID();
  try {
    await replayDeadLetters(producer, plan, { deadLetterTopic: ctx.topic });
    audited = await audit(ctx, producer, entries, command.selection, requestId);
  } finally {
    await producer.disconnect();
  }
  io.stdout(command.json ? replayJson(entries, true) : formatReplayPlan(entries, 'replayed'));
  if (!audited) return EXIT_FAILED;
  io.stderr(`audit: recorded as dead_letter.replay by ${printable(ctx.operator)}, request ${requestId}\n`);
  io.stderr('note: replaying these entries again sends further copies (consumers deduplicate them by eventId)\n');
  return EXIT_OK;
}

/**
 * Writes the replay's audit records (after the replay, like every audited change). If they cannot
 * be written the replay stands: the records (secret-free, ids only) go to stderr so the operator
 * can restore them, and the CLI exits 1.
 */
async function audit(ctx: Context, producer: Producer, entries: DeadLetterEntry[], selection: DeadLetterSelection, requestId: string): Promise<boolean> {
  const records = replayAuditEntries(entries, {
    operator: ctx.operator,
    host: hostName(),
    requestId,
    at: new Date(),
    topicPrefix: ctx.prefix,
    deadLetterTopic: ctx.topic,
    targetOf: (e) => ctx.replayTopic ?? e.sourceTopic,
    selection,
  }).map(toAuditRecord);
  const writer = createAuditWriter(producer, topicName(ctx.prefix, 'auditLog'));
  try {
    for (const record of records) await writer.append(record);
    return true;
  } catch (err) {
    ctx.io.stderr(`error: the replay was made, but the audit log could not record it (${errorMessage(err)}); restore these records to audit.log:\n`);
    for (const record of records) ctx.io.stderr(`${JSON.stringify(record)}\n`);
    return false;
  }
}
