import { CrmError, type CrmRequest, createOutboundPolicy, type OutboundPolicy, requestTarget } from '@ingest/domain';
import { Pool } from 'undici';
import { type CrmErrorDetail, classifyHttpFailure, classifyNetworkError, safeMessage } from './crm-errors.js';
import { guardedConnector, type Resolve } from '@ingest/domain';

export type { CrmRequest } from '@ingest/domain';

export interface CrmResponse {
  status: number;
  /** Parsed JSON, or undefined for an empty body. */
  body: unknown;
}

export interface CrmHttpOptions {
  /** Name used in error messages, e.g. `HubSpot`. */
  crm: string;
  baseUrl: string;
  /** Headers of every call, e.g. the bearer token. */
  headers?: Record<string, string>;
  /** Values that must never appear in an error message (tokens, secrets). */
  secrets: readonly string[];
  /** Reads a CRM's error body into a message (and a kind when the body knows better than the status). */
  describeError?: (status: number, body: unknown) => CrmErrorDetail;
  defaultRetryAfterMs?: number;
  connectTimeoutMs?: number;
  headersTimeoutMs?: number;
  bodyTimeoutMs?: number;
  /** The whole call, connect to last body byte: a CRM that drips bytes under the idle timeouts still ends. */
  requestTimeoutMs?: number;
  /** Bodies larger than this are not read: the call fails (transient) and the connection is dropped. */
  maxResponseBytes?: number;
  /** Where requests may go; default: https only, public addresses only. */
  outboundPolicy?: OutboundPolicy;
  /** Name resolution (tests pass a stub resolver); default dns.lookup. */
  resolve?: Resolve;
  connections?: number;
  /** Called once per HTTP call, for metrics (calls by CRM and status, latency); `status` 0 = no answer. */
  onCall?: (call: CrmCallObservation) => void;
  /** OAuth credentials: the bearer token comes from here (replacing `headers.authorization`), refreshed once on a 401. */
  bearer?: BearerSource;
}

/** The access token of an OAuth/JWT bearer credential (crm-sink's token manager). */
export interface BearerSource {
  /** A token valid for a while; throws (CrmError, AccountBlocked) when none can be had. */
  token(): Promise<string>;
  /** The CRM refused `rejected` with 401: a fresh token (refreshed once across replicas). */
  refreshAfterUnauthorized(rejected: string): Promise<string>;
}

export interface CrmCallObservation {
  crm: string;
  method: CrmRequest['method'];
  status: number;
  durationMs: number;
}

/** The tunable part of the HTTP options, what a caller of `createAdapter` may set. */
export type AdapterHttpOptions = Partial<
  Pick<
    CrmHttpOptions,
    | 'connectTimeoutMs'
    | 'headersTimeoutMs'
    | 'bodyTimeoutMs'
    | 'requestTimeoutMs'
    | 'maxResponseBytes'
    | 'outboundPolicy'
    | 'resolve'
    | 'connections'
    | 'onCall'
    | 'bearer'
  >
>;

export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
export const DEFAULT_REQUEST_TIMEOUT_MS = 60_000;

export interface SendOptions {
  /** Non-2xx statuses the caller handles itself (e.g. HubSpot's 409 for a duplicate unique value). */
  accept?: readonly number[];
  /** Raw body and extra headers, for a body that must be sent byte-exact (the signed webhook). */
  rawBody?: string;
  headers?: Record<string, string>;
  /**
   * Ends the call early: the account's hold and the sink's shutdown fire it (crm-call.retry.ts), so
   * a call the sink has given up on stops sending and reading instead of running to its timeout.
   */
  signal?: AbortSignal;
}

export interface CrmHttpClient {
  send(request: CrmRequest, options?: SendOptions): Promise<CrmResponse>;
  close(): Promise<void>;
}

function parseJson(text: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

class ResponseTooLarge extends Error {}

/** The body as text, or ResponseTooLarge past `max` bytes (declared or counted): never more than `max` in memory. */
async function readCapped(body: AsyncIterable<Buffer> & { destroy(err?: Error): unknown }, max: number, declared: unknown): Promise<string> {
  const length = Number(Array.isArray(declared) ? declared[0] : declared);
  if (Number.isFinite(length) && length > max) {
    body.destroy();
    throw new ResponseTooLarge();
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > max) {
      body.destroy();
      throw new ResponseTooLarge();
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * A keep-alive connection pool to one CRM base URL with connect, headers, body and whole-call
 * timeouts, a cap on response bytes, and the outbound address policy applied to the URL and
 * to every address connected to. Redirects are never followed (undici's pool does not; a 3xx
 * is a permanent failure). Non-2xx answers and network failures come back as CrmError,
 * classified in one place.
 */
export function createCrmHttpClient(options: CrmHttpOptions): CrmHttpClient {
  const policy = options.outboundPolicy ?? createOutboundPolicy();
  const urlCheck = policy.checkUrl(options.baseUrl);
  const base = new URL(options.baseUrl);
  const maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const requestTimeoutMs = options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
  const pool = new Pool(base.origin, {
    connections: options.connections ?? 4,
    connect: guardedConnector({ policy, timeoutMs: options.connectTimeoutMs ?? 5_000, ...(options.resolve ? { resolve: options.resolve } : {}) }),
    headersTimeout: options.headersTimeoutMs ?? 15_000,
    bodyTimeout: options.bodyTimeoutMs ?? 15_000,
    keepAliveTimeout: 30_000,
  });

  async function send(request: CrmRequest, sendOptions: SendOptions = {}): Promise<CrmResponse> {
    const { bearer } = options;
    if (!bearer) return sendOnce(request, sendOptions, undefined);
    const token = await bearer.token();
    try {
      return await sendOnce(request, sendOptions, token);
    } catch (err) {
      // An expired or revoked access token: refresh once (the token manager makes it one refresh
      // across replicas) and try again; a second 401 is an auth failure like any other.
      if (!(err instanceof CrmError) || err.status !== 401) throw err;
      return sendOnce(request, sendOptions, await bearer.refreshAfterUnauthorized(token));
    }
  }

  async function sendOnce(request: CrmRequest, sendOptions: SendOptions, token: string | undefined): Promise<CrmResponse> {
    // A URL stored before the policy existed (or under a looser one) is refused here, before any connection.
    if (!urlCheck.ok)
      throw new CrmError('forbidden', safeMessage(`${options.crm} URL refused by the outbound address policy: ${urlCheck.reason}`, options.secrets));
    const body = sendOptions.rawBody ?? (request.body === undefined ? undefined : JSON.stringify(request.body));
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers, ...sendOptions.headers };
    if (token !== undefined) headers.authorization = `Bearer ${token}`;
    // A form (the OAuth token endpoints) says so in its own headers.
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    let status = 0;
    let text: string;
    let retryAfter: string | string[] | undefined;
    const startedAt = performance.now();
    try {
      // The same target the dry-run shows (an empty path is the base URL itself, query included).
      const path = requestTarget(options.baseUrl, request.path);
      sendOptions.signal?.throwIfAborted();
      const timeout = AbortSignal.timeout(requestTimeoutMs);
      const signal = sendOptions.signal ? AbortSignal.any([sendOptions.signal, timeout]) : timeout;
      const response = await pool.request({ method: request.method, path, headers, body: body ?? null, signal });
      status = response.statusCode;
      retryAfter = response.headers['retry-after'];
      text = await readCapped(response.body, maxResponseBytes, response.headers['content-length']);
    } catch (err) {
      // Given up by the caller (hold, shutdown): its reason, not a network failure to retry.
      if (sendOptions.signal?.aborted) throw sendOptions.signal.reason;
      if (err instanceof ResponseTooLarge)
        throw new CrmError('transient', `${options.crm} answered ${status} with a body over ${maxResponseBytes} bytes; not read`, status);
      throw classifyNetworkError(options.crm, err, token ? [...options.secrets, token] : options.secrets);
    } finally {
      options.onCall?.({ crm: options.crm, method: request.method, status, durationMs: performance.now() - startedAt });
    }
    const parsed = parseJson(text);
    if ((status >= 200 && status < 300) || sendOptions.accept?.includes(status)) return { status, body: parsed };
    const detail = options.describeError?.(status, parsed) ?? { message: typeof parsed === 'string' ? parsed : undefined };
    const secrets = token ? [...options.secrets, token] : options.secrets;
    throw classifyHttpFailure({ crm: options.crm, status, retryAfter, detail, secrets, defaultRetryAfterMs: options.defaultRetryAfterMs });
  }

  return { send, close: () => pool.close() };
}

/** A 2xx body that is not what the CRM documents: retry, the proxy or CRM may recover. */
export function unexpectedResponse(crm: string, what: string, secrets: readonly string[]): CrmError {
  return new CrmError('transient', safeMessage(`${crm} answered an unexpected ${what}`, secrets));
}

/** Adapters take batches already split by the sink; a bigger one is a bug in the caller. */
export function assertBatchSize(crm: string, size: number, maxBatchSize: number): void {
  if (size > maxBatchSize) throw new Error(`${crm} adapter: a batch of ${size} exceeds the limit of ${maxBatchSize}; split batches before calling`);
}

export { chunk } from '@ingest/domain';
