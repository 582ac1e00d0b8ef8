import { SegmentBatchEnvelope, SegmentBatchRequest, SegmentBrowserRequest, SegmentMessage, SegmentMessageEnvelope, SegmentReceipt } from '@ingest/schemas';
import { MAX_SEGMENT_BATCH_BYTES, type SegmentType } from '@ingest/domain';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { parseJsonBody, problemResponses } from '@ingest/http';
import { authOf } from '../auth/auth.hook.js';
import { envelopeValidator } from '../http/envelope-validator.js';
import { createSegmentIntake, type SegmentIntakeDeps, type SegmentOutcome } from './segment-intake.js';

/** The server SDKs' single calls (HTTP Basic auth, the key as user name). */
const SERVER_CALLS: readonly [string, SegmentType][] = [
  ['/track', 'track'],
  ['/identify', 'identify'],
  ['/group', 'group'],
  ['/alias', 'alias'],
  ['/page', 'page'],
  ['/screen', 'screen'],
];
/** The browser and mobile SDKs' calls (the key in the body; publishable keys allowed). */
const BROWSER_CALLS: readonly [string, SegmentType][] = [
  ['/t', 'track'],
  ['/i', 'identify'],
  ['/p', 'page'],
  ['/g', 'group'],
  ['/a', 'alias'],
];

/**
 * A browser route reads its body before it knows the key, so its body stays small: one message
 * (at most 32 KB: a larger one is dead-lettered, up to this limit, and 413 beyond it) and its key.
 */
const BROWSER_BODY_LIMIT = 64 * 1024;

const TAGS = ['segment'];
const RESPONSES = { 200: SegmentReceipt, ...problemResponses(400, 401, 402, 403, 413, 415, 429, 503, 504) };

/**
 * Segment's and RudderStack's Tracking API (docs/segment.md): `/v1/batch` and the single calls
 * for their server SDKs, `/v1/t` … `/v1/a` for their browser and mobile SDKs. Same key scope,
 * allowance, dedupe and rate limits as POST /v1/events (each message counts as one event
 * against the account's events/s ceiling); the answer is Segment's `{ "success": true }` with
 * our counts beside it; refused messages are in the dead letters, never only in the answer.
 */
export function segmentRoutes(deps: SegmentIntakeDeps): FastifyPluginAsync {
  const intake = createSegmentIntake(deps);
  const answer = (request: FastifyRequest, reply: FastifyReply, outcome: SegmentOutcome) => {
    if (outcome.allowance) reply.allowanceState = outcome.allowance;
    return reply.code(200).send({ success: true, accepted: outcome.accepted, rejected: outcome.rejected, requestId: String(request.id) });
  };

  return async (app) => {
    // Only in this plugin's scope, and always read as JSON: analytics-next posts JSON as
    // text/plain (no CORS preflight), and RudderStack's Node SDK (axios) labels its gzip JSON as
    // application/x-www-form-urlencoded. Anything else is still 415.
    app.addContentTypeParser(['text/plain', 'application/x-www-form-urlencoded'], { parseAs: 'buffer' }, parseJsonBody);

    app.post<{ Body: { batch: unknown[]; sentAt?: unknown; context?: unknown } }>(
      '/batch',
      {
        bodyLimit: MAX_SEGMENT_BATCH_BYTES,
        config: { apiScope: 'events:write', keyIn: 'basic', countsEvents: true },
        validatorCompiler: envelopeValidator(SegmentBatchEnvelope),
        schema: { summary: 'Segment-compatible batch: up to 100 messages, 500 KB', tags: TAGS, body: SegmentBatchRequest, response: RESPONSES },
      },
      async (request, reply) => {
        const { account, keyType } = authOf(request);
        const { batch, sentAt, context } = request.body;
        const outcome = await intake({ account, keyType, route: '/v1/batch', messages: batch, batchSentAt: sentAt, batchContext: context, log: request.log });
        return answer(request, reply, outcome);
      },
    );

    for (const [path, type] of SERVER_CALLS) {
      app.post(
        path,
        {
          bodyLimit: MAX_SEGMENT_BATCH_BYTES,
          config: { apiScope: 'events:write', keyIn: 'basic', countsEvents: 'one' },
          validatorCompiler: envelopeValidator(SegmentMessageEnvelope),
          schema: { summary: `Segment-compatible ${type} call`, tags: TAGS, body: SegmentMessage, response: RESPONSES },
        },
        async (request, reply) => {
          const { account, keyType } = authOf(request);
          const outcome = await intake({ account, keyType, route: `/v1${path}`, type, messages: [request.body], log: request.log });
          return answer(request, reply, outcome);
        },
      );
    }

    for (const [path, type] of BROWSER_CALLS) {
      app.post(
        path,
        {
          bodyLimit: BROWSER_BODY_LIMIT,
          config: { apiScope: 'events:write', keyIn: 'body', publishableKeys: true, countsEvents: 'one' },
          validatorCompiler: envelopeValidator(SegmentMessageEnvelope),
          schema: {
            summary: `Segment browser ${type} call (key in the body)`,
            description: "The API key (a publishable one from a browser) is the body's `writeKey`, as analytics-next sends it: no Authorization header.",
            // No header scheme: the key is in the body (an absent or wrong writeKey is the usual 401).
            security: [],
            tags: TAGS,
            body: SegmentBrowserRequest,
            response: RESPONSES,
          },
        },
        async (request, reply) => {
          const { account, keyType } = authOf(request);
          const outcome = await intake({ account, keyType, route: `/v1${path}`, type, messages: [request.body], log: request.log });
          return answer(request, reply, outcome);
        },
      );
    }
  };
}
