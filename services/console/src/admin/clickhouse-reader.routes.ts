import { AccountIdParams, ClickHouseReaderView, ClickHouseReaderWithPassword } from '@ingest/schemas';
import type { ControlPlane } from '@ingest/domain';
import {
  type ClickHouse,
  clickhouseErrorCode,
  clickhouseServerVersion,
  createTenantReader,
  newReaderPassword,
  removeTenantReader,
  rotateTenantReader,
  serverHasSqlUsers,
  TENANT_READER_QUOTA,
  TENANT_READER_SETTINGS,
  TENANT_READER_TABLES,
  tenantReaderExists,
  tenantReaderName,
  toClickHouseAppError,
} from '@ingest/platform';
import type { FastifyPluginAsync } from 'fastify';
import { type Auditor, ProblemError, problemResponses } from '@ingest/http';

export interface ClickHouseReaderRoutesDeps {
  controlPlane: ControlPlane;
  auditor: Auditor;
  /** The service's database (CLICKHOUSE_DATABASE): the readers' tables are there. */
  database: string;
  /**
   * A client as a ClickHouse user that may manage users, row policies, profiles and quotas
   * (CLICKHOUSE_ACCESS_USER); undefined: not configured, and the routes answer 409 saying so.
   * Opened per request and closed after it: these calls are rare.
   */
  openAccessClient?: () => ClickHouse;
}

const problems = (...statuses: number[]) => problemResponses(...new Set([...statuses, 400, 401, 429, 503, 504]));
const PATH = '/accounts/:accountId/clickhouse-reader';
const ACCESS_USER_CODES = new Set([192, 193, 497, 514, 516]);

/**
 * The per-account ClickHouse reader of an account's data engineers (docs/clickhouse-readers.md):
 * GET shows it, POST creates it (password shown once), POST …/rotate gives it a new password,
 * DELETE removes it (200, `exists: false`). Only servers with SQL users and row policies (20.4+) can restrict a reader
 * to one account's rows; on others (18.16) every route answers 409 and creates nothing.
 * Logs and the audit log carry the user name, never the password or its hash.
 */
export function clickhouseReaderRoutes(deps: ClickHouseReaderRoutesDeps): FastifyPluginAsync {
  return async (app) => {
    const tags = ['admin'];
    const view = (accountId: string, exists: boolean): ClickHouseReaderView => ({
      accountId,
      user: tenantReaderName(accountId),
      database: deps.database,
      tables: [...TENANT_READER_TABLES],
      settings: { ...TENANT_READER_SETTINGS },
      quota: { ...TENANT_READER_QUOTA },
      exists,
    });

    /** Runs `work` with an access client on a server that can enforce a reader; 409 otherwise. */
    async function withAccess<T>(accountId: string, work: (ch: ClickHouse, exists: boolean) => Promise<T>): Promise<T> {
      const account = deps.controlPlane.accountById(accountId);
      if (!account) throw new ProblemError('notFound', `Account ${accountId} does not exist.`);
      if (!deps.openAccessClient) {
        throw new ProblemError(
          'conflict',
          'No ClickHouse user may manage users here: set CLICKHOUSE_ACCESS_USER and CLICKHOUSE_ACCESS_PASSWORD on the console (docs/clickhouse-readers.md).',
        );
      }
      const ch = deps.openAccessClient();
      try {
        const version = await clickhouseServerVersion(ch);
        if (!serverHasSqlUsers(version)) {
          throw new ProblemError(
            'conflict',
            `ClickHouse ${version} cannot restrict a reader to one account's rows (no SQL users or row policies before 20.4; 18.16 ignores users.xml row filters), so no reader is made. Upgrade the server (docs/clickhouse-readers.md).`,
          );
        }
        return await work(ch, await tenantReaderExists(ch, accountId));
      } catch (err) {
        if (err instanceof ProblemError) throw err;
        // The access user cannot log in (192, 193, 516), lacks a right (497), or the server keeps
        // users in read-only storage (514): the operator's to fix, not a retry.
        const code = clickhouseErrorCode(err);
        if (code !== undefined && ACCESS_USER_CODES.has(code)) {
          throw new ProblemError(
            'conflict',
            `CLICKHOUSE_ACCESS_USER cannot log in or may not manage this reader (ClickHouse code ${code}); check its password and grant it the rights in docs/clickhouse-readers.md.`,
          );
        }
        throw toClickHouseAppError(err, 'manage a ClickHouse reader');
      } finally {
        await ch.close();
      }
    }

    app.get<{ Params: AccountIdParams }>(
      PATH,
      {
        schema: {
          summary: "Show an account's ClickHouse reader",
          tags,
          params: AccountIdParams,
          response: { 200: ClickHouseReaderView, ...problems(404, 409) },
        },
      },
      async (request) => withAccess(request.params.accountId, async (_ch, exists) => view(request.params.accountId, exists)),
    );

    app.post<{ Params: AccountIdParams }>(
      PATH,
      {
        schema: {
          summary: "Create an account's ClickHouse reader (its password is shown once)",
          tags,
          params: AccountIdParams,
          response: { 201: ClickHouseReaderWithPassword, ...problems(404, 409) },
        },
      },
      async (request, reply) => {
        const { accountId } = request.params;
        const created = await withAccess(accountId, async (ch, exists) => {
          if (exists) throw new ProblemError('conflict', `The reader ${tenantReaderName(accountId)} exists: rotate its password or remove it.`);
          const { password, sha256Hex } = newReaderPassword();
          await createTenantReader(ch, { accountId, database: deps.database, sha256Hex });
          return { ...view(accountId, true), password };
        });
        request.log.info({ accountId, user: created.user }, 'admin: clickhouse reader created');
        await deps.auditor.record(request, { action: 'clickhouse_reader.create', accountId, target: created.user, after: { user: created.user } });
        return reply.code(201).send(created);
      },
    );

    app.post<{ Params: AccountIdParams }>(
      `${PATH}/rotate`,
      {
        schema: {
          summary: "Give an account's ClickHouse reader a new password (shown once)",
          tags,
          params: AccountIdParams,
          response: { 200: ClickHouseReaderWithPassword, ...problems(404, 409) },
        },
      },
      async (request) => {
        const { accountId } = request.params;
        const rotated = await withAccess(accountId, async (ch, exists) => {
          if (!exists) throw new ProblemError('notFound', `Account ${accountId} has no ClickHouse reader.`);
          const { password, sha256Hex } = newReaderPassword();
          await rotateTenantReader(ch, { accountId, sha256Hex });
          return { ...view(accountId, true), password };
        });
        request.log.info({ accountId, user: rotated.user }, 'admin: clickhouse reader password rotated');
        await deps.auditor.record(request, { action: 'clickhouse_reader.rotate', accountId, target: rotated.user });
        return rotated;
      },
    );

    app.delete<{ Params: AccountIdParams }>(
      PATH,
      {
        schema: {
          summary: "Remove an account's ClickHouse reader",
          tags,
          params: AccountIdParams,
          response: { 200: ClickHouseReaderView, ...problems(404, 409) },
        },
      },
      async (request) => {
        const { accountId } = request.params;
        await withAccess(accountId, async (ch, exists) => {
          if (!exists) throw new ProblemError('notFound', `Account ${accountId} has no ClickHouse reader.`);
          await removeTenantReader(ch, { accountId, database: deps.database });
        });
        request.log.info({ accountId, user: tenantReaderName(accountId) }, 'admin: clickhouse reader removed');
        await deps.auditor.record(request, { action: 'clickhouse_reader.remove', accountId, target: tenantReaderName(accountId) });
        return view(accountId, false);
      },
    );
  };
}
