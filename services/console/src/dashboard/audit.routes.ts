import { AUDIT_CURSOR_PATTERN, AuditPage } from '@ingest/schemas';
import type { AuditReader } from '@ingest/domain';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { cursorOrThrow } from '../admin/admins.routes.js';
import type { RouteLimits } from './route-options.js';
import { dashboardOf } from './session.guard.js';

const PAGE = 50;
const Query = Type.Object({ cursor: Type.Optional(Type.String({ pattern: AUDIT_CURSOR_PATTERN, maxLength: 80 })) }, { additionalProperties: false });

/**
 * The account's own actions in the audit log (its owners' changes: keys, mapping, replays),
 * newest first, a page at a time. Operators' actions on the account (suspension reasons among
 * them) are theirs to read through the admin API, not shown here.
 */
export function dashboardAuditRoutes(deps: { reader: AuditReader; limits: RouteLimits }): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Querystring: { cursor?: string } }>(
      '/audit',
      { ...deps.limits.api, schema: { hide: true, querystring: Query, response: { 200: AuditPage } } },
      async (request) => {
        const { account } = dashboardOf(request);
        return deps.reader.page({
          accountId: account.id,
          actorType: 'owner',
          ...(request.query.cursor ? { after: cursorOrThrow(request.query.cursor) } : {}),
          limit: PAGE,
        });
      },
    );
  };
}
