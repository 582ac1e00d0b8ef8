import { CREDENTIAL_NAME_PATTERN, ConnectionTestResult, CrmCredentialView, CrmPropertyList } from '@ingest/schemas';
import type { ControlPlane, OutboundPolicy } from '@ingest/domain';
import { type Static, Type } from '@sinclair/typebox';
import type { FastifyPluginAsync } from 'fastify';
import { type Auditor, ProblemError } from '@ingest/http';
import { deleteCredential, storeCredential, toCredentialView } from '../admin/crm-credentials.handlers.js';
import { bodyValidatedByHandler } from '../admin/crm-mapping.handlers.js';
import type { ConnectionChannel } from '../crm/connection-channel.client.js';
import type { RouteLimits } from './route-options.js';
import { dashboardOf } from './session.guard.js';

const NameParams = Type.Object({ name: Type.String({ pattern: CREDENTIAL_NAME_PATTERN }) });
const ConnectionView = Type.Object(
  { ...CrmCredentialView.properties, usedByMapping: Type.Boolean({ description: "The current mapping's credentialsRef: it cannot be removed." }) },
  { additionalProperties: false },
);
const ConnectionList = Type.Object(
  {
    connections: Type.Array(ConnectionView),
    /** Whether "Test connection" can be asked of crm-sink on this installation. */
    checksAvailable: Type.Boolean(),
  },
  { additionalProperties: false },
);
const CreateBody = Type.Object({ name: Type.String({ pattern: CREDENTIAL_NAME_PATTERN }), credential: Type.Unknown() }, { additionalProperties: false });
const PropertiesQuery = Type.Object({ object: Type.Union([Type.Literal('contact'), Type.Literal('company')]) });
// A credential is a token and a few URLs; 16 KiB leaves room for the longest allowed secret.
const BODY_LIMIT = 16 * 1024;

/**
 * The signed-in owner's CRM connections (the Connections page): list, add, replace the secret
 * (rotate), remove, test, and read a CRM object's properties. The account is always the
 * session's. Secrets are write-only: answers are views by allow-list (toCredentialView), as in
 * the admin API, whose store/delete code this shares (crm-credentials.handlers.ts), audit record
 * included. Tests and property reads go to crm-sink over the connection channel, since only
 * crm-sink can open a credential; they change nothing and are not audited.
 */
export function connectionsRoutes(deps: {
  controlPlane: ControlPlane;
  outbound: OutboundPolicy;
  channel: ConnectionChannel;
  limits: RouteLimits;
  auditor: Auditor;
}): FastifyPluginAsync {
  return async (app) => {
    const cp = deps.controlPlane;
    const writes = { controlPlane: cp, outbound: deps.outbound, auditor: deps.auditor, who: 'dashboard' as const };
    const handlerValidatesBody = bodyValidatedByHandler();
    const usedBy = (accountId: string) => cp.currentMapping(accountId)?.mapping.crm.credentialsRef;

    function existing(accountId: string, name: string) {
      const stored = cp.crmCredential(accountId, name);
      if (!stored) throw new ProblemError('notFound', `No CRM connection named ${name}.`);
      return stored;
    }

    app.get('/connections', { ...deps.limits.api, schema: { hide: true, response: { 200: ConnectionList } } }, async (request) => {
      const { account } = dashboardOf(request);
      const ref = usedBy(account.id);
      return {
        connections: cp.listCrmCredentials(account.id).map((c) => ({ ...toCredentialView(c), usedByMapping: c.name === ref })),
        checksAvailable: deps.channel.available,
      };
    });

    app.post<{ Body: Static<typeof CreateBody> }>(
      '/connections',
      { ...deps.limits.api, bodyLimit: BODY_LIMIT, schema: { hide: true, body: CreateBody, response: { 201: CrmCredentialView } } },
      async (request, reply) => {
        const { account } = dashboardOf(request);
        const { name, credential } = request.body;
        // Adding never overwrites: replacing a secret is the explicit rotate (PUT).
        if (cp.crmCredential(account.id, name))
          throw new ProblemError('conflict', `A CRM connection named ${name} exists already; rotate its secret or pick another name.`);
        return reply.code(201).send(await storeCredential(writes, request, account.id, name, credential));
      },
    );

    app.put<{ Params: Static<typeof NameParams>; Body: unknown }>(
      '/connections/:name',
      {
        ...deps.limits.api,
        bodyLimit: BODY_LIMIT,
        validatorCompiler: handlerValidatesBody,
        schema: { hide: true, params: NameParams, response: { 200: CrmCredentialView } },
      },
      async (request) => {
        const { account } = dashboardOf(request);
        existing(account.id, request.params.name);
        return storeCredential(writes, request, account.id, request.params.name, request.body);
      },
    );

    app.delete<{ Params: Static<typeof NameParams> }>(
      '/connections/:name',
      { ...deps.limits.api, schema: { hide: true, params: NameParams } },
      async (request) => {
        const { account } = dashboardOf(request);
        const { name } = request.params;
        if (usedBy(account.id) === name)
          throw new ProblemError('conflict', `The current CRM mapping uses ${name}: change the mapping's credentialsRef or delete the mapping first.`);
        await deleteCredential(writes, request, account.id, name);
        return { name, deleted: true };
      },
    );

    app.post<{ Params: Static<typeof NameParams> }>(
      '/connections/:name/test',
      // Changes nothing: a suspended account may still check its connection.
      {
        ...deps.limits.api,
        config: { ...deps.limits.api.config, allowedWhileSuspended: true },
        schema: { hide: true, params: NameParams, response: { 200: ConnectionTestResult } },
      },
      async (request) => {
        const { account } = dashboardOf(request);
        const stored = existing(account.id, request.params.name);
        const result = await deps.channel.test({ accountId: account.id, name: stored.name, updatedAt: stored.updatedAt });
        request.log.info(
          { accountId: account.id, credentialName: stored.name, outcome: result.outcome, status: result.status },
          'dashboard: connection tested',
        );
        return result;
      },
    );

    app.get<{ Params: Static<typeof NameParams>; Querystring: Static<typeof PropertiesQuery> }>(
      '/connections/:name/properties',
      { ...deps.limits.api, schema: { hide: true, params: NameParams, querystring: PropertiesQuery, response: { 200: CrmPropertyList } } },
      async (request) => {
        const { account } = dashboardOf(request);
        const stored = existing(account.id, request.params.name);
        return deps.channel.properties({ accountId: account.id, name: stored.name, object: request.query.object, updatedAt: stored.updatedAt });
      },
    );
  };
}
