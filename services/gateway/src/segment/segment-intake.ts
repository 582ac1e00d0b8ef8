import type { EventRecord } from '@ingest/schemas';
import {
  type Account,
  type Allowance,
  type AllowanceState,
  type ApiKeyType,
  type EventCheck,
  MAX_PUBLISHABLE_EVENT_ID_LENGTH,
  MAX_SEGMENT_MESSAGE_BYTES,
  mapSegmentMessage,
  namespacedEventId,
  rawEventMessage,
  type RefusedMessage,
  segmentDeadLetter,
  segmentMessageBytes,
  type SegmentType,
  separatesPublishableIds,
  toSegmentEventRecord,
} from '@ingest/domain';
import { AppError, isRetryable, type Producer } from '@ingest/platform';
import type { FastifyBaseLogger } from 'fastify';
import { allowanceExhausted, type IngestMetrics, ProblemError } from '@ingest/http';

export interface SegmentIntakeDeps {
  producer: Producer;
  rawTopic: string;
  deadLetterTopic: string;
  allowance: Allowance;
  /** The event validator without the email-or-domain rule (a message names its person by userId/anonymousId). */
  validate: (input: unknown, receivedAtMs: number) => EventCheck;
  metrics: IngestMetrics;
  now: () => number;
}

export interface SegmentCall {
  account: Account;
  keyType: ApiKeyType;
  /** The route, for dead letters and metrics (e.g. `/v1/batch`). */
  route: string;
  messages: readonly unknown[];
  /** Set by the single-call routes; a batch's messages name their own. */
  type?: SegmentType;
  batchSentAt?: unknown;
  batchContext?: unknown;
  log: FastifyBaseLogger;
}

export interface SegmentOutcome {
  accepted: number;
  rejected: number;
  allowance?: AllowanceState;
}

/**
 * What every Segment route does with its messages, the way POST /v1/events does with its events:
 * each is mapped (segment-message.ts) and validated on its own; the valid ones reserve the
 * allowance (a repeated messageId counts once) and go to events.raw, keyed like every event
 * (`accountId:eventId`, so the SDKs' retries are deduplicated); each refused one goes to the
 * dead-letter topic with its reason, because these SDKs never read per-message errors. The
 * answer comes only after Kafka acknowledged both.
 */
export function createSegmentIntake(deps: SegmentIntakeDeps) {
  return async (call: SegmentCall): Promise<SegmentOutcome> => {
    const { account } = call;
    const receivedAtMs = deps.now();
    const namespaced = call.keyType === 'publishable' && separatesPublishableIds(account);
    const refused: RefusedMessage[] = [];
    const valid: { record: EventRecord; generatedId: boolean; sentId: string; message: unknown }[] = [];

    for (const [index, raw] of call.messages.entries()) {
      // A browser body carries the key beside the message: never into a dead letter.
      const message = withoutWriteKey(raw);
      const sentId = messageIdOf(message);
      const refuse = (code: string, reason: string) =>
        refused.push({
          accountId: account.id,
          ...(sentId !== undefined ? { messageId: sentId } : {}),
          route: call.route,
          code,
          reason,
          message,
          atMs: receivedAtMs,
        });
      const bytes = segmentMessageBytes(message);
      if (bytes > MAX_SEGMENT_MESSAGE_BYTES) {
        refuse('too_large', `message ${index} is ${bytes} bytes as JSON; a message is at most ${MAX_SEGMENT_MESSAGE_BYTES}`);
        continue;
      }
      const mapped = mapSegmentMessage(message, {
        receivedAtMs,
        ...(call.type !== undefined ? { type: call.type } : {}),
        batchSentAt: call.batchSentAt,
        batchContext: call.batchContext,
      });
      if (!mapped.ok) {
        refuse(mapped.error.code, `message ${index}: ${mapped.error.field || '/'} ${mapped.error.message}`);
        continue;
      }
      const check = deps.validate(mapped.mapped.event, receivedAtMs);
      if (!check.ok) {
        const first = check.errors[0];
        refuse(first?.code ?? 'invalid', `message ${index}: ${fieldOf(first?.field ?? '')} ${first?.message ?? 'is invalid'}`);
        continue;
      }
      if (namespaced && !check.event.generatedId && check.event.eventId.length > MAX_PUBLISHABLE_EVENT_ID_LENGTH) {
        refuse('too_long', `message ${index}: a messageId sent with a publishable key is at most ${MAX_PUBLISHABLE_EVENT_ID_LENGTH} characters`);
        continue;
      }
      const eventId = namespacedEventId(check.event.eventId, namespaced && !check.event.generatedId);
      valid.push({
        record: toSegmentEventRecord({ ...check.event, eventId }, mapped.mapped, { accountId: account.id, receivedAtMs }),
        generatedId: check.event.generatedId,
        sentId: check.event.eventId,
        message,
      });
    }

    let allowance: AllowanceState | undefined;
    let accepted = valid;
    if (valid.length > 0) {
      const reserved = await deps.allowance.reserveEvents(
        account,
        valid.map((v) => (v.generatedId ? '' : v.record.eventId)),
        receivedAtMs,
      );
      allowance = reserved.state;
      accepted = valid.filter((_, i) => reserved.decisions[i] !== 'over');
      valid.forEach((v, i) => {
        if (reserved.decisions[i] === 'over') {
          refused.push({
            accountId: account.id,
            messageId: v.sentId,
            route: call.route,
            code: 'quota_exceeded',
            reason: 'the monthly allowance is used up',
            message: v.message,
            atMs: receivedAtMs,
          });
        }
      });
      const toWrite = [...new Map(accepted.map((v) => [v.record.eventId, v.record])).values()];
      if (toWrite.length > 0) await writeEvents(toWrite, valid, reserved.decisions, call);
    }
    await writeDeadLetters(refused);

    deps.metrics.accepted.inc({ source: 'api' }, accepted.length);
    for (const r of refused) deps.metrics.rejected.inc({ source: 'api', code: r.code });
    call.log.info({ accountId: account.id, route: call.route, accepted: accepted.length, rejected: refused.length }, 'segment messages taken');
    if (valid.length > 0 && accepted.length === 0 && allowance) {
      // Every valid message was over the allowance: the same 402 as POST /v1/events (they are in the dead letters too).
      deps.metrics.allowanceRefusals.inc({ route: call.route });
      throw allowanceExhausted(allowance, `The monthly allowance of ${allowance.limit} events is used up; it resets at ${allowance.period.end.toISOString()}.`);
    }
    return { accepted: accepted.length, rejected: refused.length, ...(allowance ? { allowance } : {}) };
  };

  async function writeEvents(records: EventRecord[], valid: { record: EventRecord; generatedId: boolean }[], decisions: readonly string[], call: SegmentCall) {
    const end = deps.metrics.produceDuration.startTimer({ topic: 'events.raw' });
    try {
      await deps.producer.send(deps.rawTopic, records.map(rawEventMessage));
      end();
    } catch (err) {
      // As POST /v1/events: maybe written → 504 (a retry of the same messageIds is stored once);
      // surely not written → the allowance is given back and 503 (Segment's SDKs retry both).
      if (err instanceof AppError && err.code === 'kafka_outcome_unknown') {
        throw new ProblemError('outcomeUnknown', 'Kafka did not answer in time; the messages may have been stored. Retry with the same messageIds.', {
          cause: err,
        });
      }
      const counted = valid.filter((_, i) => decisions[i] === 'counted').map((v) => (v.generatedId ? '' : v.record.eventId));
      await deps.allowance.releaseEvents(call.account, counted, deps.now()).catch((releaseErr: unknown) => {
        call.log.error({ err: releaseErr }, 'could not release allowance after a failed write');
      });
      if (isRetryable(err)) {
        throw new ProblemError('unavailable', 'Messages could not be stored right now; nothing was accepted. Retry with the same messageIds.', {
          headers: { 'retry-after': '5' },
          cause: err,
        });
      }
      throw err;
    }
  }

  async function writeDeadLetters(refused: RefusedMessage[]) {
    if (refused.length === 0) return;
    try {
      await deps.producer.send(deps.deadLetterTopic, refused.map(segmentDeadLetter));
    } catch (err) {
      // The accepted messages are stored; a retry stores them once more at no cost (same ids)
      // and writes the refused ones' dead letters this time.
      throw new ProblemError('unavailable', 'Refused messages could not be recorded right now; retry the request.', {
        headers: { 'retry-after': '5' },
        cause: err,
      });
    }
  }
}

function withoutWriteKey(message: unknown): unknown {
  if (message === null || typeof message !== 'object' || Array.isArray(message) || !('writeKey' in message)) return message;
  const { writeKey: _key, ...rest } = message as Record<string, unknown>;
  return rest;
}

function messageIdOf(message: unknown): string | undefined {
  const id = message !== null && typeof message === 'object' ? (message as { messageId?: unknown }).messageId : undefined;
  return typeof id === 'string' && id.length > 0 ? id : undefined;
}

/** The validator names our fields (`/eventId`, `/eventName`); the sender knows Segment's. */
function fieldOf(field: string): string {
  const segment: Record<string, string> = { '/eventId': '/messageId', '/eventName': '/event', '/timestamp': '/timestamp' };
  for (const [ours, theirs] of Object.entries(segment)) if (field === ours || field.startsWith(`${ours}/`)) return theirs + field.slice(ours.length);
  return field.startsWith('/properties') ? field : field || '/';
}
