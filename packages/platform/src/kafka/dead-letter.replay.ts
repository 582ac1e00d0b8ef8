import { AppError } from '../errors.js';
import { createLogger, type Logger } from '../logger.js';
import type { KafkaClient } from './driver.js';
import type { ConsumedMessage } from './consumer.js';
import { DEAD_LETTER_HEADERS } from './dead-letter.js';
import type { OutgoingMessage, Producer } from './producer.js';
import { readTopicToEnd } from './read-to-end.js';

/**
 * Listing and replaying the dead-letter topic (see dead-letter.ts for how letters are written).
 * A replay sends the message, unchanged, back to the topic it failed on, once its cause is
 * fixed. Replays are not recorded anywhere: replaying an entry twice sends two copies, which the
 * consumers absorb because they deduplicate by (account, eventId).
 */

/** Set on a replayed message: `<dead-letter topic>/<partition>/<offset>` it was replayed from. */
export const REPLAYED_FROM_HEADER = 'dlq-replayed-from';
const DEAD_LETTER_HEADER_PREFIX = 'dlq-';

export interface DeadLetterEntry {
  /** Position in the dead-letter topic. */
  partition: number;
  offset: string;
  code: string;
  reason: string;
  sourceTopic: string;
  sourcePartition: number | null;
  sourceOffset: string;
  failedAt: string;
  consumer: string;
  /** Key and value as dead-lettered: event contents, never printed unless asked for. */
  key: Buffer | null;
  value: Buffer | null;
  valueBytes: number;
  headers: Record<string, string>;
  /** Set when this letter is a replay that failed again: the entry it was replayed from. */
  replayedFrom: string | null;
}

/** `<partition>/<offset>`: how the CLI and the `dlq-replayed-from` header name an entry. */
export function entryPosition(entry: Pick<DeadLetterEntry, 'partition' | 'offset'>): string {
  return `${entry.partition}/${entry.offset}`;
}

export function toDeadLetterEntry(message: ConsumedMessage): DeadLetterEntry {
  const h = message.headers;
  const sourcePartition = h[DEAD_LETTER_HEADERS.sourcePartition];
  return {
    partition: message.partition,
    offset: message.offset,
    code: h[DEAD_LETTER_HEADERS.code] ?? '',
    reason: h[DEAD_LETTER_HEADERS.reason] ?? '',
    sourceTopic: h[DEAD_LETTER_HEADERS.sourceTopic] ?? '',
    sourcePartition: sourcePartition !== undefined && /^\d+$/.test(sourcePartition) ? Number(sourcePartition) : null,
    sourceOffset: h[DEAD_LETTER_HEADERS.sourceOffset] ?? '',
    failedAt: h[DEAD_LETTER_HEADERS.failedAt] ?? '',
    consumer: h[DEAD_LETTER_HEADERS.consumer] ?? '',
    key: message.key,
    value: message.value,
    valueBytes: message.value?.length ?? 0,
    headers: h,
    replayedFrom: h[REPLAYED_FROM_HEADER] ?? null,
  };
}

/** What to replay: explicit entries (`<partition>/<offset>`), or every entry with a code. */
export type DeadLetterSelection = { positions: readonly string[] } | { code: string };

export function matchesSelection(selection: DeadLetterSelection): (entry: DeadLetterEntry) => boolean {
  if ('code' in selection) return (entry) => entry.code === selection.code;
  const positions = new Set(selection.positions);
  return (entry) => positions.has(entryPosition(entry));
}

export interface ReadDeadLettersOptions {
  /** At most this many entries: the oldest of each partition, then the oldest overall by failure time. */
  limit: number;
  /**
   * `newest`: the newest `limit` entries instead (of each partition, then overall), still in
   * failure order: what a "latest first" view wants. Memory is the same bound either way.
   */
  keep?: 'oldest' | 'newest';
  filter?: (entry: DeadLetterEntry) => boolean;
  /** Only these partitions of the dead-letter topic are read; default all. */
  partitions?: readonly number[];
  logger?: Logger;
  timeoutMs?: number;
}

/**
 * Reads the dead-letter topic from its beginning to the end offsets it has when the call
 * starts, under a throwaway consumer group that commits nothing (the processors' groups are not
 * touched). Letters written meanwhile may be included. Keeps at most `limit` matching entries per
 * partition (the oldest, or with `keep: 'newest'` the newest), so memory stays bounded, then
 * returns `limit` of them overall (the first or the last) ordered by failure time. Ask for one more than you show to learn whether there are more.
 */
export async function readDeadLetters(kafka: KafkaClient, topic: string, options: ReadDeadLettersOptions): Promise<DeadLetterEntry[]> {
  if (!(options.limit >= 0)) throw new AppError('invalid_argument', `limit must be >= 0, got ${options.limit}`);
  if (options.limit === 0) return [];
  const newest = options.keep === 'newest';
  const perPartition = new Map<number, DeadLetterEntry[]>();
  await readTopicToEnd(kafka, {
    topic,
    ...(options.partitions ? { partitions: options.partitions } : {}),
    logger: options.logger ?? createLogger({ service: 'dead-letter-reader', level: 'silent' }),
    timeoutMs: options.timeoutMs ?? 60_000,
    onMessage(message) {
      const kept = perPartition.get(message.partition) ?? [];
      if (!newest && kept.length >= options.limit) return;
      const entry = toDeadLetterEntry(message);
      if (options.filter && !options.filter(entry)) return;
      // Offsets grow within a partition: the first kept is the oldest, dropped for a newer one.
      if (kept.length >= options.limit) kept.shift();
      kept.push(entry);
      perPartition.set(message.partition, kept);
    },
  });
  const sorted = sortEntries([...perPartition.values()].flat());
  return newest ? sorted.slice(-options.limit) : sorted.slice(0, options.limit);
}

/** Oldest failure first; the position breaks ties so the order is stable. */
export function sortEntries(entries: DeadLetterEntry[]): DeadLetterEntry[] {
  return [...entries].sort((a, b) => compare(a.failedAt, b.failedAt) || a.partition - b.partition || compare(BigInt(a.offset), BigInt(b.offset)));
}

function compare<T extends string | bigint>(a: T, b: T): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The message a replay sends: the original key and value, the original headers without the
 * `dlq-*` ones (also a previous replay's), and where it was replayed from.
 */
export function toReplayMessage(entry: DeadLetterEntry, deadLetterTopic: string): OutgoingMessage {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(entry.headers)) {
    if (!name.startsWith(DEAD_LETTER_HEADER_PREFIX)) headers[name] = value;
  }
  headers[REPLAYED_FROM_HEADER] = `${deadLetterTopic}/${entryPosition(entry)}`;
  return { key: entry.key, value: entry.value ?? Buffer.alloc(0), headers };
}

export interface ReplayPlan {
  /** Replayable entries per source topic, in dead-letter order. */
  byTopic: Map<string, DeadLetterEntry[]>;
  refused: { entry: DeadLetterEntry; reason: string }[];
}

/**
 * Decides where each entry goes. A source topic comes from a header, so it is only trusted when
 * it is one of `allowedTopics` (the deployment's own topics): a crafted letter must not be able
 * to write into an arbitrary topic, and never back into the dead-letter topic itself.
 */
export function planReplay(entries: readonly DeadLetterEntry[], options: { deadLetterTopic: string; allowedTopics: readonly string[] }): ReplayPlan {
  const allowed = new Set(options.allowedTopics);
  allowed.delete(options.deadLetterTopic);
  const plan: ReplayPlan = { byTopic: new Map(), refused: [] };
  for (const entry of entries) {
    if (entry.sourceTopic === '') plan.refused.push({ entry, reason: `no ${DEAD_LETTER_HEADERS.sourceTopic} header` });
    else if (!allowed.has(entry.sourceTopic)) plan.refused.push({ entry, reason: `source topic ${entry.sourceTopic} is not a topic of this deployment` });
    else plan.byTopic.set(entry.sourceTopic, [...(plan.byTopic.get(entry.sourceTopic) ?? []), entry]);
  }
  return plan;
}

export interface ReplayResult {
  replayed: { topic: string; entries: DeadLetterEntry[] }[];
}

/**
 * Sends every entry of the plan to its source topic through the shared producer (acks=all,
 * idempotent). Resolving means the broker has them all; a rejection means some may have been
 * written (replaying again is safe: consumers deduplicate).
 */
export async function replayDeadLetters(producer: Producer, plan: ReplayPlan, options: { deadLetterTopic: string }): Promise<ReplayResult> {
  if (plan.refused.length > 0) {
    throw new AppError('replay_refused', `${plan.refused.length} selected dead letters cannot be replayed; nothing was sent`);
  }
  const replayed: ReplayResult['replayed'] = [];
  for (const [topic, entries] of plan.byTopic) {
    await producer.send(
      topic,
      entries.map((e) => toReplayMessage(e, options.deadLetterTopic)),
    );
    replayed.push({ topic, entries });
  }
  return { replayed };
}

/**
 * Entries that were replayed before and failed again: the letters whose `dlq-replayed-from`
 * names one of `selected`. A replay that succeeded leaves no trace, so this finds only those.
 */
export function earlierReplays(selected: readonly DeadLetterEntry[], all: readonly DeadLetterEntry[], deadLetterTopic: string): Map<string, DeadLetterEntry[]> {
  const byOrigin = new Map<string, DeadLetterEntry[]>();
  const wanted = new Set(selected.map((e) => `${deadLetterTopic}/${entryPosition(e)}`));
  for (const e of all) {
    if (e.replayedFrom !== null && wanted.has(e.replayedFrom)) {
      const origin = e.replayedFrom.slice(deadLetterTopic.length + 1);
      byOrigin.set(origin, [...(byOrigin.get(origin) ?? []), e]);
    }
  }
  return byOrigin;
}

/**
 * The account a dead letter belongs to: the `accountId` of its JSON value (events and CRM
 * records carry one) and the `<accountId>:` its key starts with (how the gateway and the job
 * runner key events). When both are present they must agree; a letter with neither, or with
 * two different accounts, belongs to nobody (only the operator's CLI sees it).
 */
export function deadLetterAccountId(entry: Pick<DeadLetterEntry, 'key' | 'value'>): string | undefined {
  let fromValue: string | undefined;
  if (entry.value !== null && entry.value.length > 0) {
    try {
      const parsed = JSON.parse(entry.value.toString('utf8')) as unknown;
      if (typeof parsed === 'object' && parsed !== null && typeof (parsed as { accountId?: unknown }).accountId === 'string') {
        fromValue = (parsed as { accountId: string }).accountId;
      }
    } catch {
      // not JSON (e.g. an invalid_json letter): the key may still tell
    }
  }
  const key = entry.key?.toString('utf8') ?? '';
  const fromKey = key.includes(':') ? key.slice(0, key.indexOf(':')) : undefined;
  if (fromValue !== undefined && fromKey !== undefined && fromValue !== fromKey) return undefined;
  const account = fromValue ?? fromKey;
  return account === '' ? undefined : account;
}
