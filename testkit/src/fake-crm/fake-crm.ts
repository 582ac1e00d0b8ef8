import { Readable } from 'node:stream';
import { createOutboundPolicy } from '@ingest/domain';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { registerFakeHubSpot } from './fake-hubspot.routes.js';
import { type FakeOAuthOptions, type FakeOAuthServer, registerFakeOAuth } from './fake-oauth.server.js';
import { registerFakeSalesforce } from './fake-salesforce.routes.js';
import { registerFakeSchemaEndpoints } from './fake-schema.routes.js';
import { registerFakeWebhook } from './fake-webhook.routes.js';
import {
  type FailSpec,
  type FakeCall,
  type FakeCrmName,
  FakeCrmState,
  type FakeRecord,
  type RateLimit,
  type SalesforcePaging,
  bearerToken,
  hubspotError,
  salesforceError,
} from './fake-crm.state.js';

export type { FailSpec, FakeCall, FakeCrmName, FakeRecord, RateLimit, SalesforcePaging } from './fake-crm.state.js';

/**
 * A fake HubSpot + Salesforce + webhook receiver on 127.0.0.1 for tests over real HTTP. It checks
 * auth and request shapes as the real APIs do, keeps the records written, records every call,
 * enforces a per-token rate limit and answers injected faults in each CRM's own error format.
 *
 *   const crm = await startFakeCrm({ tokens: ['tok-a'] });
 *   createAdapter({ type: 'hubspot', accessToken: 'tok-a', baseUrl: crm.url });
 *   createAdapter({ type: 'salesforce', accessToken: 'tok-a', instanceUrl: crm.url });
 *   createAdapter({ type: 'webhook', url: `${crm.url}/webhook/acme`, secret: FAKE_WEBHOOK_SECRET });
 */
export const FAKE_CRM_TOKEN = 'fake-crm-token';
/**
 * The fake CRM listens on plain http on loopback, which the outbound address policy refuses by
 * default: adapters in tests are made with this policy (the operator settings CRM_ALLOW_HTTP=true
 * and CRM_ALLOWED_CIDRS=127.0.0.1/32 do the same for a running sink).
 */
export const FAKE_CRM_OUTBOUND = createOutboundPolicy({ allowHttp: true, allowedCidrs: '127.0.0.1/32' });
/** In the Standard Webhooks format (`whsec_` + base64), as its libraries generate secrets. */
export const FAKE_WEBHOOK_SECRET = 'whsec_ZmFrZS1jcm0td2ViaG9vay1zaWduaW5nLWtleS0zMmI=';

export interface FakeCrmOptions {
  /** Accepted bearer tokens (HubSpot and Salesforce); anything else gets a 401. */
  tokens?: string[];
  /** Secrets the webhook receiver accepts (several during a rotation). */
  webhookSecrets?: string[];
  /** Per token. Default: HubSpot's 100 requests per 10 s; Salesforce and the webhook unlimited. */
  rateLimits?: Partial<Record<FakeCrmName, RateLimit | false>>;
  /**
   * Called synchronously when a call arrives (`received`, before any injected delay) and when its
   * answer has been handed to the socket (`answered`): a chaos test kills the client right then.
   */
  onCall?: (call: FakeCall, phase: 'received' | 'answered') => void;
  /** Bearer tokens accepted besides `tokens`, decided per call (a fake OAuth server's live access tokens). */
  acceptToken?: (token: string) => boolean;
  /** Serves a fake OAuth authorization server on the same host (as api.hubapi.com does); its access tokens are accepted. */
  oauth?: FakeOAuthOptions;
}

export interface FakeCrm {
  start(): Promise<void>;
  /** Base URL, e.g. `http://127.0.0.1:40123`, once started. */
  readonly url: string;
  readonly calls: readonly FakeCall[];
  /** With `oauth`: the authorization server on this host. */
  readonly oauth?: Omit<FakeOAuthServer, 'url' | 'stop'>;
  /** HubSpot: `contacts`, `companies`, `notes` (by activity key); Salesforce: `Contact`, `Account`, `Task` (by external id); webhook: `contact`, `company`, `activity`. */
  records(crm: FakeCrmName, object: string): ReadonlyMap<string, FakeRecord>;
  failNext(spec: FailSpec): void;
  /** Forgets the injected faults not used up yet (e.g. a CRM that was slow is fast again). */
  clearFaults(): void;
  /** How Salesforce query results are paged from now on (until `reset`). */
  salesforcePaging(paging: SalesforcePaging): void;
  /** Forgets records, calls, faults, rate-limit windows and paging settings. */
  reset(): void;
  stop(): Promise<void>;
}

const DEFAULT_RATE_LIMITS: Partial<Record<FakeCrmName, RateLimit>> = { hubspot: { max: 100, windowMs: 10_000 } };

function crmOf(url: string): FakeCrmName | undefined {
  if (url.startsWith('/crm/v3/') || url.startsWith('/crm/v4/') || url.startsWith('/account-info/')) return 'hubspot';
  if (url.startsWith('/services/data/')) return 'salesforce';
  if (url.startsWith('/webhook/')) return 'webhook';
  return undefined;
}

function batchSizeOf(body: unknown): number {
  if (typeof body !== 'object' || body === null) return 0;
  const b = body as { inputs?: unknown; records?: unknown; activities?: unknown };
  const list = b.inputs ?? b.records ?? b.activities;
  return Array.isArray(list) ? list.length : 0;
}

function sendError(reply: FastifyReply, crm: FakeCrmName, status: number, retryAfter?: number | string): FastifyReply {
  if (retryAfter !== undefined) void reply.header('retry-after', String(retryAfter));
  reply.code(status);
  if (crm === 'hubspot') {
    if (status === 429)
      return reply.send(
        hubspotError('RATE_LIMITS', 'You have reached your ten_secondly_rolling limit.', { errorType: 'RATE_LIMIT', policyName: 'TEN_SECONDLY_ROLLING' }),
      );
    if (status === 401) return reply.send(hubspotError('INVALID_AUTHENTICATION', 'Authentication credentials not found.'));
    return reply.send(hubspotError(status >= 500 ? 'INTERNAL_ERROR' : 'VALIDATION_ERROR', `Injected failure ${status}`));
  }
  if (crm === 'salesforce') {
    if (status === 401) return reply.send(salesforceError('INVALID_SESSION_ID', 'Session expired or invalid'));
    if (status === 429) return reply.send(salesforceError('REQUEST_LIMIT_EXCEEDED', 'TotalRequests Limit exceeded.'));
    return reply.send(salesforceError(status >= 500 ? 'SERVER_UNAVAILABLE' : 'INVALID_FIELD', `Injected failure ${status}`));
  }
  return reply.send({ error: `Injected failure ${status}` });
}

/** `total` bytes of spaces, produced as the client reads them; a client that stops reading ends the stream. */
function sendHugeBody(reply: FastifyReply, total: number): FastifyReply {
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  function* body() {
    for (let sent = 0; sent < total; sent += chunk.length) yield total - sent >= chunk.length ? chunk : chunk.subarray(0, total - sent);
  }
  return reply.code(200).header('content-type', 'application/json').header('content-length', String(total)).send(Readable.from(body()));
}

export function createFakeCrm(options: FakeCrmOptions = {}): FakeCrm {
  const tokens = new Set(options.tokens ?? [FAKE_CRM_TOKEN]);
  const limits = { ...DEFAULT_RATE_LIMITS, ...options.rateLimits };
  const state = new FakeCrmState(Object.fromEntries(Object.entries(limits).filter(([, l]) => l)) as Partial<Record<FakeCrmName, RateLimit>>);
  const rawBodies = new WeakMap<FastifyRequest, string>();
  const app: FastifyInstance = Fastify({ logger: false, bodyLimit: 8 * 1024 * 1024 });

  // The webhook signature covers the exact bytes, so the raw body is kept next to the parsed one.
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    rawBodies.set(request, body as string);
    try {
      done(null, JSON.parse(body as string));
    } catch (err) {
      (err as Error & { statusCode?: number }).statusCode = 400;
      done(err as Error, undefined);
    }
  });

  app.addHook('preHandler', async (request, reply) => {
    const crm = crmOf(request.url);
    if (!crm) return;
    const token = crm === 'webhook' ? (request.params as { name?: string }).name : bearerToken(request.headers.authorization);
    const call: FakeCall = {
      at: Date.now(),
      crm,
      method: request.method,
      path: request.url,
      token,
      batchSize: batchSizeOf(request.body),
      body: request.body,
      status: 0,
      ...(typeof request.headers['webhook-id'] === 'string' ? { webhookId: request.headers['webhook-id'] } : {}),
    };
    state.calls.push(call);
    reply.raw.once('finish', () => {
      call.status = reply.statusCode;
      options.onCall?.(call, 'answered');
    });
    options.onCall?.(call, 'received');
    const fault = state.takeFault(crm, token, request.url);
    if (fault?.delayMs) await new Promise((r) => setTimeout(r, fault.delayMs));
    if (fault?.status) return sendError(reply, crm, fault.status, fault.retryAfter ?? fault.retryAfterSeconds);
    if (fault?.bodyBytes) return sendHugeBody(reply, fault.bodyBytes);
    if (crm === 'webhook') return;
    const accepted = tokens.has(token ?? '') || options.acceptToken?.(token ?? '') === true || oauth?.acceptsAccessToken(token ?? '') === true;
    if (token === undefined || !accepted) return sendError(reply, crm, 401);
    const retryAfter = state.overRateLimit(crm, token);
    if (retryAfter === undefined) return;
    // Salesforce signals its API limits with a 403, without Retry-After.
    if (crm === 'salesforce') return reply.code(403).send(salesforceError('REQUEST_LIMIT_EXCEEDED', 'TotalRequests Limit exceeded.'));
    return sendError(reply, crm, 429, retryAfter);
  });

  const oauth = options.oauth ? registerFakeOAuth(app, options.oauth, () => url ?? '') : undefined;
  registerFakeHubSpot(app, state);
  registerFakeSalesforce(app, state);
  registerFakeSchemaEndpoints(app);
  registerFakeWebhook(app, state, options.webhookSecrets ?? [FAKE_WEBHOOK_SECRET], rawBodies);

  let url: string | undefined;
  return {
    async start() {
      // Port 0: the kernel picks a free port at bind time, so parallel test files never collide.
      url = await app.listen({ host: '127.0.0.1', port: 0 });
    },
    get url() {
      if (url === undefined) throw new Error('fake CRM not started');
      return url;
    },
    calls: state.calls,
    ...(oauth ? { oauth } : {}),
    records: (crm, object) => state.store(crm, object),
    failNext: (spec) => state.addFault(spec),
    clearFaults: () => state.clearFaults(),
    salesforcePaging: (paging) => {
      state.salesforcePaging = paging;
    },
    reset: () => state.reset(),
    stop: () => app.close(),
  };
}

export async function startFakeCrm(options: FakeCrmOptions = {}): Promise<FakeCrm> {
  const crm = createFakeCrm(options);
  await crm.start();
  return crm;
}
