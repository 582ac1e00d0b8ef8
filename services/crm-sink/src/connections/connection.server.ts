import { setTimeout as sleep } from 'node:timers/promises';
import { type CredentialOpener, type CrmCredential, type MappingReader, secretsEqual, type StoredCrmCredential } from '@ingest/domain';
import type { Component, Logger } from '@ingest/platform';
import { ConnectionTestRequest, ConnectionTestResult, CrmPropertyList, PropertiesRequest } from '@ingest/schemas';
import Fastify, { type FastifyReply } from 'fastify';
import type { BearerSource } from '../adapters/http.client.js';
import type { ConnectionChecks } from './connection.checks.js';
import type { TakeToken } from '../rate/shared-token-bucket.js';

/**
 * The connection channel's listener (docs/crm-sync.md, "Connection checks"): the console asks
 * crm-sink to test a stored credential or read an object's properties, because only crm-sink
 * can open the credential. Its own port, bound to the pod network only where the console must
 * reach it; every request carries `Authorization: Bearer <CRM_SINK_INTERNAL_TOKEN>`, compared in
 * constant time. Bodies are tiny (an account id, a name, an object); the account comes from the
 * console's session, and a credential is looked up by (account, name) only, so one account can
 * never reach another's. Each account has its own rate limit (Redis, shared by all replicas).
 */
export interface ConnectionServerDeps {
  host: string;
  port: number;
  /** Accepted bearer tokens (the current one and, during a rotation, the previous one). */
  tokens: readonly string[];
  credentials: Pick<MappingReader, 'crmCredential'>;
  openCredential: CredentialOpener;
  /** An OAuth/JWT bearer credential's token source (the sink's token manager); absent: the record's token is used. */
  bearerFor?: (stored: StoredCrmCredential, credential: CrmCredential) => BearerSource | undefined;
  checks: ConnectionChecks;
  /** A token of the account's check budget: 0 when taken, else ms until one is free. */
  takeToken: (accountId: string) => TakeToken;
  /** How long to wait for the control plane to show a credential the console has just stored. */
  freshnessWaitMs: number;
  logger: Logger;
}

const MAX_BODY_BYTES = 4 * 1024;
const FRESHNESS_POLL_MS = 100;

function problem(reply: FastifyReply, status: number, title: string, detail: string): FastifyReply {
  return reply.code(status).type('application/problem+json').send({ type: 'about:blank', title, status, detail });
}

export function createConnectionServer(deps: ConnectionServerDeps): Component & { readonly port: number } {
  const log = deps.logger.child({ component: 'connection-channel' });
  const accepted = deps.tokens.filter((t) => t !== '');
  const app = Fastify({ logger: false, bodyLimit: MAX_BODY_BYTES, connectionTimeout: 10_000, requestTimeout: 60_000, keepAliveTimeout: 5_000 });
  let boundPort = deps.port;

  app.addHook('onRequest', async (request, reply) => {
    const match = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '');
    const given = match?.[1];
    if (given === undefined || !accepted.some((t) => secretsEqual(t, given)))
      return problem(reply, 401, 'Unauthorized', 'A valid CRM_SINK_INTERNAL_TOKEN is required.');
  });

  app.setErrorHandler((err: { statusCode?: number; message: string }, _request, reply) => {
    const status = err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 500;
    if (status === 500) log.error({ err }, 'connection channel: request failed');
    return problem(reply, status, status === 500 ? 'Internal Server Error' : 'Bad Request', status === 500 ? 'The check failed inside crm-sink.' : err.message);
  });

  /**
   * The credential, once the control plane shows it at least as new as the console's copy (a
   * check right after a save); without `updatedAt`, what it holds now.
   */
  async function credentialOf(accountId: string, name: string, updatedAt: string | undefined): Promise<StoredCrmCredential | undefined> {
    if (updatedAt === undefined) return deps.credentials.crmCredential(accountId, name);
    const deadline = Date.now() + deps.freshnessWaitMs;
    for (;;) {
      const stored = deps.credentials.crmCredential(accountId, name);
      if (stored && stored.updatedAt >= updatedAt) return stored;
      if (Date.now() >= deadline) return stored;
      await sleep(FRESHNESS_POLL_MS);
    }
  }

  /** Rate limit, lookup and opening; a reply already sent when undefined. */
  async function openFor(
    reply: FastifyReply,
    body: { accountId: string; name: string; updatedAt?: string },
  ): Promise<{ credential: CrmCredential; bearer: BearerSource | undefined } | undefined> {
    const waitMs = await deps.takeToken(body.accountId)();
    if (waitMs > 0) {
      void reply.header('retry-after', String(Math.ceil(waitMs / 1000)));
      problem(reply, 429, 'Too Many Requests', `Too many connection checks for this account; try again in ${Math.ceil(waitMs / 1000)} s.`);
      return undefined;
    }
    const stored = await credentialOf(body.accountId, body.name, body.updatedAt);
    if (!stored) {
      problem(reply, 404, 'Not Found', `No CRM credential named ${body.name}.`);
      return undefined;
    }
    let credential: CrmCredential;
    try {
      credential = deps.openCredential(stored);
    } catch {
      problem(reply, 409, 'Conflict', `The credential ${body.name} cannot be opened by crm-sink (sealed with a key it does not hold): store it again.`);
      return undefined;
    }
    try {
      return { credential, bearer: deps.bearerFor?.(stored, credential) };
    } catch (err) {
      // An OAuth credential on a sink without OAuth settings: say which, rather than a 500.
      problem(reply, 409, 'Conflict', err instanceof Error ? err.message : String(err));
      return undefined;
    }
  }

  app.post<{ Body: ConnectionTestRequest }>(
    '/internal/v1/connections/test',
    { schema: { body: ConnectionTestRequest, response: { 200: ConnectionTestResult } } },
    async (request, reply) => {
      const opened = await openFor(reply, request.body);
      if (!opened) return reply;
      const { credential, bearer } = opened;
      const result = await deps.checks.test(credential, bearer);
      log.info(
        { accountId: request.body.accountId, credentialName: request.body.name, crmType: credential.type, outcome: result.outcome, status: result.status },
        'connection test',
      );
      return result;
    },
  );

  app.post<{ Body: PropertiesRequest }>(
    '/internal/v1/connections/properties',
    { schema: { body: PropertiesRequest, response: { 200: CrmPropertyList } } },
    async (request, reply) => {
      const opened = await openFor(reply, request.body);
      if (!opened) return reply;
      const { credential, bearer } = opened;
      const answer = await deps.checks.properties(credential, request.body.object, bearer);
      log.info(
        { accountId: request.body.accountId, credentialName: request.body.name, object: request.body.object, ok: 'list' in answer },
        'connection properties',
      );
      if ('list' in answer) return answer.list;
      // The CRM's refusal is the answer, not a failure of the channel.
      return problem(reply, 502, 'Bad Gateway', answer.failure.message);
    },
  );

  return {
    name: 'connection-channel',
    get port() {
      return boundPort;
    },
    async start() {
      await app.listen({ host: deps.host, port: deps.port });
      const address = app.server.address();
      if (address && typeof address === 'object') boundPort = address.port;
      log.info({ host: deps.host, port: boundPort }, 'connection channel listening');
    },
    async stop() {
      await app.close();
    },
    healthy: () => app.server.listening,
  };
}
