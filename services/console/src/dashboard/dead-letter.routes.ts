import {
  allTopicSpecs,
  type DeadLetterEntry,
  entryPosition,
  type KafkaClient,
  type Logger,
  planReplay,
  type Producer,
  type Registry,
  replayDeadLetters,
  topicName,
} from '@ingest/platform';
import { DEAD_LETTER_ROUTE_HEADER, loadErasedCheck } from '@ingest/domain';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { type Auditor, ProblemError } from '@ingest/http';
import { createDeadLetterReader, type DeadLetterTopic } from './dead-letter.reader.js';
import type { RouteLimits } from './route-options.js';
import { dashboardOf } from './session.guard.js';

/** At most this many dead letters per topic are listed. */
export const DEAD_LETTER_LIST_LIMIT = 100;
const READ_TIMEOUT_MS = 15_000;
/** A letter's stored value is shown up to this size (a refused Segment batch message is at most 500 KB). */
export const DEAD_LETTER_DETAIL_MAX_BYTES = 64 * 1024;

const Which = Type.Union([Type.Literal('events'), Type.Literal('crm')]);
const ListQuery = Type.Object(
  {
    refresh: Type.Optional(Type.Union([Type.Literal('true'), Type.Literal('false')])),
    // The event debugger follows only what the gateway and the pipeline refused.
    topic: Type.Optional(Which),
  },
  { additionalProperties: false },
);
const LetterParams = Type.Object({
  topic: Which,
  partition: Type.String({ pattern: '^[0-9]{1,9}$' }),
  offset: Type.String({ pattern: '^[0-9]{1,19}$' }),
});
const ReplayBody = Type.Object(
  {
    topic: Which,
    position: Type.String({ pattern: '^[0-9]{1,9}/[0-9]{1,19}$', description: '<partition>/<offset> in the dead-letter topic' }),
  },
  { additionalProperties: false },
);

export interface DeadLetterView {
  topic: 'events' | 'crm';
  position: string;
  code: string;
  reason: string;
  failedAt: string;
  consumer: string;
  sourceTopic: string;
  eventId: string | null;
  eventName: string | null;
  /** The gateway route that refused a Segment message (`dlq-route`), e.g. `/v1/batch`; null for other letters. */
  route: string | null;
  valueBytes: number;
  replayedFrom: string | null;
}

/**
 * The session account's dead letters in events.deadletter and crm.deadletter, and the replay
 * of one of them through the dead-letter CLI's code path (planReplay + replayDeadLetters; CRM
 * letters go to crm.replay). A letter belongs to an account by its key and value
 * (deadLetterAccountId); any other letter is "not found".
 */
export function deadLettersRoutes(deps: {
  kafka: KafkaClient | undefined;
  producer: Producer;
  topicPrefix: string;
  limits: RouteLimits;
  metrics: Registry;
  auditor: Auditor;
}): FastifyPluginAsync {
  return async (app) => {
    const topics = {
      events: { topic: topicName(deps.topicPrefix, 'deadLetters'), replayTopic: undefined },
      crm: { topic: topicName(deps.topicPrefix, 'crmDeadLetters'), replayTopic: topicName(deps.topicPrefix, 'crmReplay') },
    } as const;
    const reader = deps.kafka
      ? createDeadLetterReader({
          kafka: deps.kafka,
          topics: { events: topics.events.topic, crm: topics.crm.topic },
          metrics: deps.metrics,
          limit: DEAD_LETTER_LIST_LIMIT + 1,
          // The list is newest first: an account with more letters sees its latest ones.
          keep: 'newest',
          view: toView,
          timeoutMs: READ_TIMEOUT_MS,
        })
      : undefined;
    const readerOf = () => {
      if (!reader) throw new ProblemError('unavailable', 'Dead letters cannot be read by this gateway (no Kafka client configured).');
      return reader;
    };

    // `refresh=true` (the page's Refresh button): letters read after the click, not the cached list.
    // The debugger polls without it: the reader's per-account cache bounds the scans.
    app.get<{ Querystring: { refresh?: 'true' | 'false'; topic?: 'events' | 'crm' } }>(
      '/deadletters',
      { ...deps.limits.api, schema: { hide: true, querystring: ListQuery } },
      async (request) => {
        const { account } = dashboardOf(request);
        const fresh = request.query.refresh === 'true';
        const which: DeadLetterTopic[] = request.query.topic ? [request.query.topic] : ['events', 'crm'];
        const lists = await Promise.all(which.map((w) => readerOf().list(w, account.id, { fresh })));
        // Each list is in failure order with one more than shown: its newest LIMIT are shown.
        const views = lists.flatMap((l) => l.slice(-DEAD_LETTER_LIST_LIMIT));
        // Newest failure first.
        views.sort((x, y) => (x.failedAt < y.failedAt ? 1 : x.failedAt > y.failedAt ? -1 : 0));
        return { limit: DEAD_LETTER_LIST_LIMIT, entries: views, truncated: lists.some((l) => l.length > DEAD_LETTER_LIST_LIMIT) };
      },
    );

    // One letter with its stored value: event contents, for the account's owner only (never logged).
    app.get<{ Params: { topic: DeadLetterTopic; partition: string; offset: string } }>(
      '/deadletters/:topic/:partition/:offset',
      { ...deps.limits.api, schema: { hide: true, params: LetterParams } },
      async (request) => {
        const { account } = dashboardOf(request);
        const { topic: which } = request.params;
        const position = `${BigInt(request.params.partition)}/${BigInt(request.params.offset)}`;
        const entry = await readerOf().find(which, account.id, (e) => entryPosition(e) === position);
        if (!entry)
          throw new ProblemError('notFound', `No dead letter of this account at ${position} in ${which === 'crm' ? 'crm.deadletter' : 'events.deadletter'}.`);
        return { letter: toView(which, entry), ...storedValue(entry.value) };
      },
    );

    app.post<{ Body: { topic: 'events' | 'crm'; position: string } }>(
      '/deadletters/replay',
      { ...deps.limits.api, bodyLimit: 1024, schema: { hide: true, body: ReplayBody } },
      async (request) => {
        const { account, session } = dashboardOf(request);
        const { topic: which, position } = request.body;
        const normalised = position
          .split('/')
          .map((n) => BigInt(n).toString())
          .join('/');
        const entry = await readerOf().find(which, account.id, (e) => entryPosition(e) === normalised);
        const found = entry ? [entry] : [];
        if (!entry)
          throw new ProblemError('notFound', `No dead letter of this account at ${normalised} in ${which === 'crm' ? 'crm.deadletter' : 'events.deadletter'}.`);
        const { topic, replayTopic } = topics[which];
        // Events of erased people and companies are not replayed (docs/erasure.md).
        // request.log is the service's pino logger (base-app.ts passes it as fastify's loggerInstance).
        const logger = request.log as unknown as Logger;
        if (deps.kafka && (await loadErasedCheck(deps.kafka, topicName(deps.topicPrefix, 'erasures'), logger))(entry.value)) {
          throw new ProblemError('conflict', 'This dead letter holds an event of an erased person or company; it is not replayed.');
        }
        const plan = planReplay(found, { deadLetterTopic: topic, allowedTopics: allTopicSpecs().map((s) => deps.topicPrefix + s.name) });
        const refused = plan.refused[0];
        if (refused) throw new ProblemError('conflict', `This dead letter cannot be replayed: ${refused.reason}.`);
        // As the CLI: CRM letters go to crm.replay, which only the crm-sink reads.
        if (replayTopic !== undefined) plan.byTopic = new Map([[replayTopic, found]]);
        const result = await replayDeadLetters(deps.producer, plan, { deadLetterTopic: topic });
        const to = result.replayed[0]?.topic ?? '';
        request.log.info(
          { accountId: account.id, ownerId: session.ownerId, deadLetterTopic: topic, position: normalised, to },
          'dashboard: dead letter replayed',
        );
        const view = toView(which, entry);
        await deps.auditor.record(request, {
          action: 'dead_letter.replay',
          accountId: account.id,
          target: `${topic.slice(deps.topicPrefix.length)}/${normalised}`,
          after: { to: to.slice(deps.topicPrefix.length), eventId: view.eventId, code: view.code },
        });
        return { replayed: view, to: to.slice(deps.topicPrefix.length) };
      },
    );
  };
}

/** What the list shows of a letter (and what the cache keeps: never its value). */
function toView(topic: 'events' | 'crm', e: DeadLetterEntry): DeadLetterView {
  let eventId: string | null = null;
  let eventName: string | null = null;
  try {
    const parsed = JSON.parse(e.value?.toString('utf8') ?? '') as { eventId?: unknown; eventName?: unknown; messageId?: unknown; event?: unknown };
    if (typeof parsed.eventId === 'string') eventId = parsed.eventId;
    if (typeof parsed.eventName === 'string') eventName = parsed.eventName;
    // A Segment message the gateway refused (docs/segment.md) is in its own words.
    if (eventId === null && typeof parsed.messageId === 'string') eventId = parsed.messageId;
    if (eventName === null && typeof parsed.event === 'string') eventName = parsed.event;
  } catch {
    // a letter whose value is not JSON shows without event fields
  }
  return {
    topic,
    position: entryPosition(e),
    code: e.code,
    reason: e.reason,
    failedAt: e.failedAt,
    consumer: e.consumer,
    sourceTopic: e.sourceTopic,
    eventId,
    eventName,
    route: e.headers[DEAD_LETTER_ROUTE_HEADER] ?? null,
    valueBytes: e.valueBytes,
    replayedFrom: e.replayedFrom,
  };
}

/** The letter's value as stored: parsed JSON, else text, within DEAD_LETTER_DETAIL_MAX_BYTES. */
function storedValue(value: Buffer | null): { value: unknown; valueText: string | null; valueShown: boolean } {
  if (value === null || value.length === 0) return { value: null, valueText: null, valueShown: true };
  if (value.length > DEAD_LETTER_DETAIL_MAX_BYTES) return { value: null, valueText: null, valueShown: false };
  const text = value.toString('utf8');
  try {
    return { value: JSON.parse(text) as unknown, valueText: null, valueShown: true };
  } catch {
    return { value: null, valueText: text, valueShown: true };
  }
}
