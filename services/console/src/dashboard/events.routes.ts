import type { EventSyncState, SyncStateStore } from '@ingest/domain';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { type EventStore, ProblemError, toStoredEvent } from '@ingest/http';
import type { RouteLimits } from './route-options.js';
import { dashboardOf } from './session.guard.js';

/** The debugger lists at most this many events; older ones are read back one by one. */
export const DEBUGGER_EVENT_LIMIT = 100;
/** Only events received within this window are listed (bounds the scan of a big account). */
export const DEBUGGER_WINDOW_MS = 7 * 24 * 3600 * 1000;

const ListQuery = Type.Object(
  {
    name: Type.Optional(Type.String({ maxLength: 200 })),
    identity: Type.Optional(Type.String({ maxLength: 320 })),
  },
  { additionalProperties: false },
);
const EventParams = Type.Object({ eventId: Type.String({ minLength: 1, maxLength: 255 }) });

/**
 * The event debugger's API: the session account's latest stored events (deduplicated, with
 * their CRM sync state) and one event in full. ClickHouse is read with escaped literals only.
 */
export function dashboardEventsRoutes(deps: { store: EventStore; syncStates: SyncStateStore; limits: RouteLimits; now: () => number }): FastifyPluginAsync {
  return async (app) => {
    const syncStatesOf = async (request: FastifyRequest, accountId: string, eventIds: string[]): Promise<EventSyncState[]> =>
      // A display: without Redis the events are still listed, shown as pending.
      deps.syncStates.readMany(accountId, eventIds).catch((err: unknown) => {
        request.log.warn({ err: { message: (err as Error).message } }, 'CRM sync states unavailable');
        return eventIds.map((): EventSyncState => ({ state: 'pending' }));
      });

    app.get<{ Querystring: { name?: string; identity?: string } }>(
      '/events',
      { ...deps.limits.api, schema: { hide: true, querystring: ListQuery } },
      async (request) => {
        const { account } = dashboardOf(request);
        const name = request.query.name?.trim() || undefined;
        const identity = request.query.identity?.trim() || undefined;
        const events = await deps.store.recentEvents(account.id, {
          limit: DEBUGGER_EVENT_LIMIT,
          sinceMs: deps.now() - DEBUGGER_WINDOW_MS,
          ...(name ? { name } : {}),
          ...(identity ? { identity } : {}),
        });
        const states = await syncStatesOf(
          request,
          account.id,
          events.map((e) => e.eventId),
        );
        return {
          limit: DEBUGGER_EVENT_LIMIT,
          events: events.map((e, i) => ({ ...toStoredEvent(e, states[i]), copies: e.copies })),
        };
      },
    );

    app.get<{ Params: { eventId: string } }>('/events/:eventId', { ...deps.limits.api, schema: { hide: true, params: EventParams } }, async (request) => {
      const { account } = dashboardOf(request);
      const { eventId } = request.params;
      const [stored, states] = await Promise.all([deps.store.findEvent(account.id, eventId), syncStatesOf(request, account.id, [eventId])]);
      // Another account's event id is just as unknown.
      if (!stored) throw new ProblemError('notFound', `No stored event ${eventId} in this account.`);
      return toStoredEvent(stored, states[0]);
    });
  };
}
