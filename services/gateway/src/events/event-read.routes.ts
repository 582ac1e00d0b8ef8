import { EventIdParams, StoredEvent } from '@ingest/schemas';
import { type EventSyncState, readBackCandidates, type SyncStateStore } from '@ingest/domain';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { authOf } from '../auth/auth.hook.js';
import { type EventStore, ProblemError, problemResponses, toStoredEvent } from '@ingest/http';

/**
 * GET /v1/events/{eventId}: one event of the caller's own account, as stored in ClickHouse.
 *
 * An event becomes readable once the pipeline has stored it (normally seconds after the 202),
 * so a 404 right after sending is normal. "No such event" and "another account's event" get
 * the same answer: ids of other accounts cannot be probed.
 */
export function eventReadRoutes(deps: { store: EventStore; syncStates: SyncStateStore }): FastifyPluginAsync {
  return async (app) => {
    // eventIds may be 255 characters: buildApp raises the router's maxParamLength for that.
    const handler = async (request: FastifyRequest, eventId: string): Promise<StoredEvent> => {
      const { account } = authOf(request);
      // The sync state is a display: without Redis the event is still readable, shown as pending.
      const syncOf = (id: string) =>
        deps.syncStates.read(account.id, id).catch((err: unknown): EventSyncState => {
          request.log.warn({ err: { message: (err as Error).message } }, 'CRM sync state unavailable');
          return { state: 'pending' };
        });
      const [stored, sync] = await Promise.all([deps.store.findEvent(account.id, eventId), syncOf(eventId)]);
      if (stored) return toStoredEvent(stored, sync);
      // An id sent through a publishable key is stored as `pk:` + the id (publishable-ids.ts):
      // the id the caller was answered finds it too, and the stored eventId says which it is.
      const twin = readBackCandidates(eventId)[1];
      const browser = twin === undefined ? undefined : await deps.store.findEvent(account.id, twin);
      if (browser && twin !== undefined) return toStoredEvent(browser, await syncOf(twin));
      throw new ProblemError(
        'notFound',
        `No event ${eventId} in this account. Events become readable a few seconds after they were accepted; retry shortly if you just sent it.`,
      );
    };
    const response = { 200: StoredEvent, ...problemResponses(400, 401, 403, 404, 429, 503) };

    app.get<{ Params: EventIdParams }>(
      '/events/:eventId',
      {
        config: { apiScope: 'events:read' },
        schema: {
          summary: 'Read back a stored event',
          description:
            "The event as stored, with its CRM sync state. Own account only. Readable once the pipeline has stored it, normally seconds after the 202: a 404 right after sending is normal. An id sent through a publishable key is stored as `pk:` + the id: asked for by the id, the secret keys' event of that id is answered, else the publishable one (its `eventId` says which).",
          tags: ['events'],
          params: EventIdParams,
          response,
        },
      },
      (request) => handler(request, request.params.eventId),
    );
  };
}
