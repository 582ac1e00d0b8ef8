import { toProblem } from './control-plane-problem.js';
import {
  AccountIdParams,
  AccountList,
  AccountViewSchema,
  ApiKeyIdParams,
  ApiKeyList,
  type ApiKeyView,
  ApiKeyViewSchema,
  CreateAccountBody,
  CreateApiKeyBody,
  CreatedApiKey,
  SetPlanBody,
} from '@ingest/schemas';
import {
  type Allowance,
  type ApiKeyRecord,
  type AuditReader,
  type ControlPlane,
  createEventValidator,
  effectiveScopes,
  keyType,
  type EventCheck,
  type LedgerReader,
  type LedgerWriter,
  type OutboundPolicy,
  PLAN_LIMITS,
  type Plan,
  allowancePeriod,
  type RecordStateReader,
} from '@ingest/domain';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { type Auditor, ProblemError, problemResponses } from '@ingest/http';
import { accessRoutes } from './access.routes.js';
import { createAdminAuth, requireAdmin } from './admin-auth.js';
import { adminsRoutes } from './admins.routes.js';
import { ledgerRoutes } from './ledger.routes.js';
import { clickhouseReaderRoutes, type ClickHouseReaderRoutesDeps } from './clickhouse-reader.routes.js';
import { erasureRoutes } from './erasure.routes.js';
import type { ErasureService } from './erasure.service.js';
import { crmRoutes } from './crm.routes.js';
import type { MappingCrmCheck } from '../crm/mapping-crm.check.js';
import { ownersRoutes } from './owners.routes.js';

export interface AdminRoutesDeps {
  controlPlane: ControlPlane;
  /** Bearer token of the admin API (the admin `admin`); empty disables it (every admin path answers 404). */
  adminToken: string;
  /** The previous ADMIN_TOKEN, still valid while it is rotated out; empty: none. */
  adminTokenPrevious?: string;
  /** Every state change is recorded through it; the log is read back through `reader`. */
  audit: { auditor: Auditor; reader: AuditReader };
  /** Event rules for CRM dry-runs; default: the standard ones. */
  validateEvent?: (input: unknown, receivedAtMs: number) => EventCheck;
  /** The crm-sink's record state (read-only), for CRM dry-runs. */
  recordStates: RecordStateReader;
  /** Where CRM credentials may point; default https and public addresses only. */
  outboundPolicy?: OutboundPolicy;
  /** Checks mappings against their CRM (crm.routes.ts has the default). */
  mappingCheck?: MappingCrmCheck;
  /** The billing ledger: plan changes are recorded in it; it is read through /billing/ledger. */
  ledger: {
    writer: LedgerWriter;
    reader: LedgerReader;
    periodCounts: Allowance['periodCounts'];
  };
  /** Per-account ClickHouse readers (clickhouse-reader.routes.ts). */
  clickhouseReaders: Pick<ClickHouseReaderRoutesDeps, 'database' | 'openAccessClient'>;
  /** Erasure of a person or company (docs/erasure.md); absent, the route does not exist. */
  erasure?: ErasureService;
  now?: () => number;
}

const DEFAULT_KEY_NAME = 'default';

// Every admin route can also answer 400 (malformed ids), 429 and 503.
const problems = (...statuses: number[]) => problemResponses(...new Set([...statuses, 400, 429, 503, 504]));

/**
 * Admin API (/admin/v1): accounts, plans and API keys, written through the control plane.
 * Logs carry account and key ids only: never the admin token or a plaintext key.
 */
export function adminRoutes(deps: AdminRoutesDeps): FastifyPluginAsync {
  return async (app) => {
    if (deps.adminToken === '') {
      // Disabled: no route exists, so every admin path gets the app's 404 problem, and the
      // OpenAPI document does not list an API nobody can call.
      app.log.info('admin API disabled (empty admin token)');
      return;
    }
    const cp = deps.controlPlane;
    const authenticate = createAdminAuth({ tokens: { current: deps.adminToken, previous: deps.adminTokenPrevious ?? '' }, directory: cp });
    // preParsing: after the rate limiter, so guesses at admin tokens are rate limited too.
    app.addHook('preParsing', async (request: FastifyRequest, _reply, payload) => {
      requireAdmin(request, authenticate);
      return payload;
    });
    const { auditor } = deps.audit;
    const tags = ['admin'];
    // A child plugin: the token hook above guards the CRM routes too.
    await app.register(
      crmRoutes({
        controlPlane: cp,
        validateEvent: deps.validateEvent ?? createEventValidator(),
        recordStates: deps.recordStates,
        ...(deps.outboundPolicy ? { outboundPolicy: deps.outboundPolicy } : {}),
        ...(deps.mappingCheck ? { mappingCheck: deps.mappingCheck } : {}),
        now: deps.now ?? Date.now,
        auditor,
      }),
    );
    await app.register(ownersRoutes({ controlPlane: cp, auditor }));
    await app.register(accessRoutes({ controlPlane: cp, auditor }));
    await app.register(
      adminsRoutes({ controlPlane: cp, auditor, reader: deps.audit.reader, environmentTokens: { previous: Boolean(deps.adminTokenPrevious) } }),
    );
    await app.register(ledgerRoutes({ reader: deps.ledger.reader }));
    await app.register(clickhouseReaderRoutes({ controlPlane: cp, auditor, ...deps.clickhouseReaders }));
    if (deps.erasure) await app.register(erasureRoutes({ controlPlane: cp, service: deps.erasure, auditor }));
    const now = deps.now ?? Date.now;

    app.post<{ Body: CreateAccountBody }>(
      '/accounts',
      { schema: { summary: 'Create an account', tags, body: CreateAccountBody, response: { 201: AccountViewSchema, ...problems(400, 401, 503) } } },
      async (request, reply) => {
        const account = await mapErrors(() => cp.createAccount(request.body));
        request.log.info({ accountId: account.id, plan: account.plan }, 'admin: account created');
        await auditor.record(request, { action: 'account.create', accountId: account.id, after: { name: account.name, plan: account.plan } });
        return reply.code(201).send(account);
      },
    );

    app.get('/accounts', { schema: { summary: 'List accounts', tags, response: { 200: AccountList, ...problems(401) } } }, async () => ({
      accounts: cp.listAccounts(),
    }));

    app.get<{ Params: AccountIdParams }>(
      '/accounts/:accountId',
      { schema: { summary: 'Show an account', tags, params: AccountIdParams, response: { 200: AccountViewSchema, ...problems(401, 404) } } },
      async (request) => accountOr404(cp, request.params.accountId),
    );

    app.put<{ Params: AccountIdParams; Body: SetPlanBody }>(
      '/accounts/:accountId/plan',
      {
        schema: {
          summary: "Change an account's plan",
          tags,
          params: AccountIdParams,
          body: SetPlanBody,
          response: { 200: AccountViewSchema, ...problems(400, 401, 404, 503) },
        },
      },
      async (request) => {
        const before = cp.accountById(request.params.accountId);
        const account = await mapErrors(() => cp.setPlan(request.params.accountId, request.body.plan));
        request.log.info({ accountId: account.id, plan: account.plan }, 'admin: plan set');
        if (before && before.plan !== account.plan) {
          await auditor.record(request, { action: 'account.plan_set', accountId: account.id, before: { plan: before.plan }, after: { plan: account.plan } });
          await recordPlanChange(before.plan, account.plan, account.id);
        }
        return account;
      },
    );

    /**
     * After the plan changed (the change is the fact; the record follows it). A record that
     * cannot be written is answered 503 so the operator knows; the plan stays changed.
     */
    async function recordPlanChange(previousPlan: Plan, plan: Plan, accountId: string): Promise<void> {
      const at = now();
      const period = allowancePeriod(at);
      try {
        const counts = await deps.ledger.periodCounts(accountId, period.id);
        await deps.ledger.writer.append([
          {
            v: 1,
            kind: 'plan_changed',
            accountId,
            period: period.id,
            at: new Date(at).toISOString(),
            plan,
            previousPlan,
            limit: PLAN_LIMITS[plan],
            eventsCharged: counts.used,
            overageRefused: counts.refused,
            recordedAt: new Date(at).toISOString(),
          },
        ]);
      } catch (err) {
        throw new ProblemError('unavailable', `The plan is now ${plan}, but the billing ledger could not record the change; record it by hand.`, {
          cause: err,
        });
      }
    }

    app.post<{ Params: AccountIdParams; Body: CreateApiKeyBody | undefined }>(
      '/accounts/:accountId/keys',
      {
        schema: {
          summary: 'Create an API key (the key is shown only in this response)',
          tags,
          params: AccountIdParams,
          body: CreateApiKeyBody,
          response: { 201: CreatedApiKey, ...problems(400, 401, 404, 409, 503) },
        },
        // The body is optional: no body at all means `{}` (the default name).
        preValidation: async (request) => {
          request.body ??= {};
        },
      },
      async (request, reply) => {
        const { name = DEFAULT_KEY_NAME, scopes, type } = request.body ?? {};
        const { record, plaintext } = await mapErrors(() =>
          cp.createApiKey(request.params.accountId, name, { ...(scopes ? { scopes } : {}), ...(type ? { type } : {}) }),
        );
        request.log.info({ accountId: record.accountId, keyId: record.id, type: record.type, scopes: record.scopes }, 'admin: api key created');
        await auditor.record(request, { action: 'key.create', accountId: record.accountId, target: record.id, after: toView(record) });
        return reply.code(201).send({ apiKey: plaintext, key: toView(record) });
      },
    );

    app.get<{ Params: AccountIdParams }>(
      '/accounts/:accountId/keys',
      {
        schema: {
          summary: "List an account's API keys (without the keys)",
          tags,
          params: AccountIdParams,
          response: { 200: ApiKeyList, ...problems(401, 404) },
        },
      },
      async (request) => {
        const account = accountOr404(cp, request.params.accountId);
        return { keys: cp.listApiKeys(account.id).map(toView) };
      },
    );

    app.post<{ Params: ApiKeyIdParams }>(
      '/accounts/:accountId/keys/:keyId/revoke',
      {
        schema: {
          summary: 'Revoke an API key (idempotent; takes effect on every gateway within seconds)',
          tags,
          params: ApiKeyIdParams,
          response: { 200: ApiKeyViewSchema, ...problems(401, 404, 503) },
        },
      },
      async (request) => {
        const { accountId, keyId } = request.params;
        const wasActive = cp.listApiKeys(accountId).some((k) => k.id === keyId && k.revokedAt === null);
        const record = await mapErrors(() => cp.revokeApiKey(accountId, keyId));
        request.log.info({ accountId, keyId }, 'admin: api key revoked');
        if (wasActive)
          await auditor.record(request, {
            action: 'key.revoke',
            accountId,
            target: keyId,
            before: { revokedAt: null },
            after: { revokedAt: record.revokedAt },
          });
        return toView(record);
      },
    );
  };
}

/** Keys made before scopes existed are shown with what they may do: every scope. */
function toView(record: ApiKeyRecord): ApiKeyView {
  const { hash: _hash, ...view } = record;
  return { ...view, scopes: [...effectiveScopes(record)], type: keyType(record) };
}

function accountOr404(cp: ControlPlane, accountId: string) {
  const account = cp.accountById(accountId);
  if (!account) throw new ProblemError('notFound', `Account ${accountId} does not exist.`);
  return account;
}

/** Control plane errors as problems (control-plane-problem.ts). */
async function mapErrors<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw toProblem(err);
  }
}
