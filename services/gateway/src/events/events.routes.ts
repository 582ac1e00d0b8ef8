import { type EventRecord, EventsEnvelope, EventsReceipt, EventsRequest } from '@ingest/schemas';
import {
  type Allowance,
  boundErrors,
  type EventCheck,
  MAX_PUBLISHABLE_EVENT_ID_LENGTH,
  namespacedEventId,
  rawEventMessage,
  separatesPublishableIds,
  toEventRecord,
} from '@ingest/domain';
import { AppError, isRetryable, type Producer } from '@ingest/platform';
import type { FastifyPluginAsync } from 'fastify';
import { type FieldError, type IngestMetrics, ProblemError, problemResponses, allowanceExhausted } from '@ingest/http';
import { authOf } from '../auth/auth.hook.js';
import { envelopeValidator } from '../http/envelope-validator.js';
import type { EventsAdmission } from '../limits/admission.js';

export interface EventsRouteDeps {
  producer: Producer;
  rawTopic: string;
  allowance: Allowance;
  /** The account's ceilings and the allowance, in one Redis call (admission.ts). */
  admission: EventsAdmission;
  validate: (input: unknown, receivedAtMs: number) => EventCheck;
  metrics: IngestMetrics;
  now: () => number;
}

const ROUTE = '/v1/events';

/**
 * POST /v1/events: 1 to 100 events, each validated on its own. Valid events are accepted and
 * the rest rejected with per-event errors; the 202 is sent only after Kafka acknowledged every
 * accepted event (acks=all). Repeated event ids are accepted and written again (downstream
 * dedupe makes them harmless) but count once against the allowance.
 * 503 means nothing was written (the producer dropped the send before it reached Kafka); 504
 * means Kafka took the send but did not answer in time, so the events may be stored.
 */
export function eventsRoutes(deps: EventsRouteDeps): FastifyPluginAsync {
  return async (app) => {
    app.post<{ Body: { events: unknown[] } }>(
      '/events',
      {
        bodyLimit: 1024 * 1024,
        config: { apiScope: 'events:write', publishableKeys: true, countsEvents: true, admitsWithAllowance: true },
        validatorCompiler: envelopeValidator(EventsEnvelope),
        schema: {
          summary: 'Send up to 100 events',
          tags: ['events'],
          body: EventsRequest,
          response: { 202: EventsReceipt, ...problemResponses(400, 401, 402, 403, 413, 415, 429, 503, 504) },
        },
      },
      async (request, reply) => {
        const { account, keyType } = authOf(request);
        // Ids a publishable key supplies live in their own namespace (publishable-ids.ts): stored,
        // deduplicated and counted as `pk:` + the id; the receipt answers the id as sent.
        const namespaced = keyType === 'publishable' && separatesPublishableIds(account);
        const receivedAtMs = deps.now();
        const errors: FieldError[] = [];
        const valid: { index: number; record: EventRecord; generatedId: boolean; sentId: string }[] = [];

        request.body.events.forEach((input, index) => {
          const check = deps.validate(input, receivedAtMs);
          if (check.ok && namespaced && !check.event.generatedId && check.event.eventId.length > MAX_PUBLISHABLE_EVENT_ID_LENGTH) {
            errors.push({
              index,
              eventId: check.event.eventId,
              field: `/events/${index}/eventId`,
              code: 'too_long',
              message: `an eventId sent with a publishable key is at most ${MAX_PUBLISHABLE_EVENT_ID_LENGTH} characters`,
            });
          } else if (check.ok) {
            const storedId = namespacedEventId(check.event.eventId, namespaced && !check.event.generatedId);
            valid.push({
              index,
              generatedId: check.event.generatedId,
              sentId: check.event.eventId,
              record: toEventRecord({ ...check.event, eventId: storedId }, { accountId: account.id, receivedAtMs, source: 'api', jobId: null }),
            });
          } else {
            for (const e of check.errors) {
              errors.push({
                index,
                ...(check.eventId ? { eventId: check.eventId } : {}),
                field: `/events/${index}${e.field}`,
                code: e.code,
                message: e.message,
              });
            }
          }
        });

        if (valid.length === 0) {
          // Nothing to reserve: the ceilings alone (a request over them is its 429, as on every route).
          await deps.admission.admit(request);
          countRejections(deps.metrics, errors);
          throw new ProblemError('validation', 'No event in the request is valid; nothing was accepted.', { errors });
        }

        const { decisions, state } = await deps.admission.admitAndReserve(
          request,
          account,
          valid.map((v) => (v.generatedId ? '' : v.record.eventId)),
          receivedAtMs,
        );
        reply.allowanceState = state;
        if (decisions.every((d) => d === 'over')) {
          deps.metrics.allowanceRefusals.inc({ route: ROUTE });
          throw allowanceExhausted(state, `The monthly allowance of ${state.limit} events is used up; it resets at ${state.period.end.toISOString()}.`);
        }

        const accepted = valid.filter((_, i) => decisions[i] !== 'over');
        valid.forEach((v, i) => {
          if (decisions[i] === 'over') {
            errors.push({
              index: v.index,
              eventId: v.sentId,
              field: `/events/${v.index}`,
              code: 'quota_exceeded',
              message: 'the monthly allowance is used up',
            });
          }
        });

        // One copy per id per request: repeats inside a request are accepted but written once.
        const toWrite = [...new Map(accepted.map((v) => [v.record.eventId, v.record])).values()];
        const end = deps.metrics.produceDuration.startTimer({ topic: 'events.raw' });
        try {
          await deps.producer.send(deps.rawTopic, toWrite.map(rawEventMessage));
          end();
        } catch (err) {
          // Maybe written: nothing is given back (a retry with the same eventIds is stored once and
          // charged once after the reconcile) and the answer names the ids, so even generated
          // ones can be retried without a copy.
          if (err instanceof AppError && err.code === 'kafka_outcome_unknown') {
            throw new ProblemError('outcomeUnknown', 'Kafka did not answer in time; the events may have been stored. Retry with these eventIds.', {
              extensions: { eventIds: accepted.map((v) => v.sentId) },
              cause: err,
            });
          }
          const counted = valid.filter((_, i) => decisions[i] === 'counted').map((v) => (v.generatedId ? '' : v.record.eventId));
          await deps.allowance.releaseEvents(account, counted, receivedAtMs).catch((releaseErr: unknown) => {
            request.log.error({ err: releaseErr }, 'could not release allowance after a failed write');
          });
          if (isRetryable(err)) {
            throw new ProblemError('unavailable', 'Events could not be stored right now; nothing was accepted. Retry with the same eventIds.', {
              headers: { 'retry-after': '5' },
              cause: err,
            });
          }
          throw err;
        }

        errors.sort((a, b) => (a.index ?? 0) - (b.index ?? 0));
        deps.metrics.accepted.inc({ source: 'api' }, accepted.length);
        countRejections(deps.metrics, errors);
        request.log.info({ accountId: account.id, accepted: accepted.length, rejected: request.body.events.length - accepted.length }, 'events accepted');
        return reply.code(202).send({
          accepted: accepted.length,
          rejected: request.body.events.length - accepted.length,
          requestId: String(request.id),
          eventIds: accepted.map((v) => v.sentId),
          // The first 100 errors (with errorsTotal when there were more), like every errors[].
          ...(errors.length > 0 ? boundErrors(errors) : {}),
        });
      },
    );
  };
}

function countRejections(metrics: IngestMetrics, errors: FieldError[]): void {
  // One count per rejected event, under the code of its first error.
  const seen = new Set<number>();
  for (const e of errors) {
    if (e.index === undefined || seen.has(e.index)) continue;
    seen.add(e.index);
    metrics.rejected.inc({ source: 'api', code: e.code });
  }
}
