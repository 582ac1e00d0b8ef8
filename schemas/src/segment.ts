import { type Static, Type } from '@sinclair/typebox';
import { MAX_EVENTS_PER_REQUEST } from './ingest-event.js';

/**
 * The Segment- and RudderStack-compatible intake (docs/segment.md): the request shapes their
 * SDKs send, for the routes' OpenAPI document. The routes validate only the envelope (an object,
 * a batch of 1 to 100); each message is then mapped and checked on its own, and a refused one is
 * dead-lettered with its reason while the rest of its batch is accepted, so these shapes stay
 * open (Segment's SDKs add fields of their own, e.g. `_metadata`, `integrations`).
 */
const isoTime = (description: string) => Type.Optional(Type.String({ maxLength: 64, description }));

export const SegmentMessage = Type.Object(
  {
    type: Type.Optional(
      Type.String({
        description: 'track, identify, group, page, screen or alias. Required in a batch; the single-call routes set it.',
        examples: ['track'],
      }),
    ),
    messageId: Type.Optional(Type.String({ description: 'Becomes the eventId (deduplication for 7 days); generated when absent.' })),
    userId: Type.Optional(Type.String({ description: 'Your user id; a message needs a userId or an anonymousId.' })),
    anonymousId: Type.Optional(Type.String({ description: 'The device or browser id.' })),
    event: Type.Optional(Type.String({ description: 'track: the event name (eventName).' })),
    properties: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'track, page, screen: the properties.' })),
    traits: Type.Optional(
      Type.Record(Type.String(), Type.Unknown(), {
        description: 'identify, group: stored as the properties; traits.email (identify), traits.domain or website (group) name whom.',
      }),
    ),
    groupId: Type.Optional(Type.String({ description: 'group: the group id.' })),
    previousId: Type.Optional(Type.String({ description: 'alias: the earlier id.' })),
    name: Type.Optional(Type.String({ description: 'page, screen: the page name.' })),
    context: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Stored as sent: ip, userAgent, page, campaign, library, ...' })),
    timestamp: isoTime('When it happened by the sender\u2019s clock (kept as originalTimestamp; corrected with sentAt).'),
    sentAt: isoTime('When the sender sent it, by the same clock.'),
  },
  { $id: 'SegmentMessage', description: 'A Segment (or RudderStack) call; at most 32 KB as JSON.' },
);

export const SegmentBatchRequest = Type.Object(
  {
    batch: Type.Array(SegmentMessage, { minItems: 1, maxItems: MAX_EVENTS_PER_REQUEST, description: '1 to 100 messages, at most 500 KB in all.' }),
    sentAt: isoTime('When the batch was sent; applies to messages without their own.'),
    context: Type.Optional(Type.Record(Type.String(), Type.Unknown(), { description: 'Merged under each message\u2019s own context.' })),
  },
  { description: 'POST /v1/batch.' },
);
export const SegmentBatchEnvelope = Type.Object({ batch: Type.Array(Type.Unknown(), { minItems: 1, maxItems: MAX_EVENTS_PER_REQUEST }) });

/** The browser and mobile SDKs' body: one message with the write key inside (often sent as text/plain). */
export const SegmentBrowserRequest = Type.Intersect(
  [SegmentMessage, Type.Object({ writeKey: Type.String({ description: 'The API key (a publishable key from a browser).' }) })],
  {
    description: 'POST /v1/t, /v1/i, /v1/p, /v1/g, /v1/a.',
  },
);
export const SegmentMessageEnvelope = Type.Object({});

export const SegmentReceipt = Type.Object(
  {
    success: Type.Literal(true, { description: 'Segment\u2019s answer: the request was taken.' }),
    accepted: Type.Integer({ minimum: 0, description: 'Messages accepted (stored once each).' }),
    rejected: Type.Integer({ minimum: 0, description: 'Messages refused; each is in the dead letters with its reason.' }),
    requestId: Type.String(),
  },
  { $id: 'SegmentReceipt' },
);
export type SegmentReceipt = Static<typeof SegmentReceipt>;
