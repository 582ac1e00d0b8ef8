import type { ConnectionTestRequest, ConnectionTestResult, CrmPropertyList, PropertiesRequest } from '@ingest/schemas';
import { ProblemError } from '@ingest/http';
import type { ConsoleConfig } from '../config.js';

/**
 * The console's side of the connection channel to crm-sink (docs/crm-sync.md, "Connection
 * checks"): POSTs with the shared bearer token, a deadline, and a cap on the answer's size, so a
 * stuck or misbehaving crm-sink costs a request at most `timeoutMs` and `maxAnswerBytes`. Its
 * failures are the dashboard's problems: 503 when crm-sink cannot be asked, the channel's own
 * 404/409/429 passed on with their words, 502 with the CRM's refusal in plain words.
 */
export interface ConnectionChannel {
  readonly available: boolean;
  test(request: ConnectionTestRequest): Promise<ConnectionTestResult>;
  properties(request: PropertiesRequest): Promise<CrmPropertyList>;
}

export interface ConnectionChannelOptions {
  url: string;
  /** Empty: the channel is not configured (checks answer 503 and the page says so). */
  token: string;
  timeoutMs: number;
  /** Property lists are the largest answers; bounded in crm-sink too (PROPERTY_LIST_BOUNDS). */
  maxAnswerBytes?: number;
  fetch?: typeof fetch;
}

const DEFAULT_MAX_ANSWER_BYTES = 2 * 1024 * 1024;

async function readBounded(response: Response, max: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > max) {
    await response.body?.cancel();
    throw new ProblemError('unavailable', 'crm-sink answered more than the console reads; try again later.');
  }
  const reader = response.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > max) {
      await reader.cancel();
      throw new ProblemError('unavailable', 'crm-sink answered more than the console reads; try again later.');
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

const PASSED_ON: Record<number, 'notFound' | 'conflict' | 'rateLimited' | 'crmRefused'> = {
  404: 'notFound',
  409: 'conflict',
  429: 'rateLimited',
  502: 'crmRefused',
};

export function createConnectionChannel(options: ConnectionChannelOptions): ConnectionChannel {
  const doFetch = options.fetch ?? fetch;
  const max = options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  const base = options.url.replace(/\/+$/, '');

  async function post<T>(path: string, body: unknown): Promise<T> {
    if (options.token === '') throw new ProblemError('unavailable', 'Connection checks are not configured on this installation (CRM_SINK_INTERNAL_TOKEN).');
    let response: Response;
    let text: string;
    try {
      response = await doFetch(`${base}/internal/v1/connections/${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${options.token}` },
        body: JSON.stringify(body),
        redirect: 'error',
        signal: AbortSignal.timeout(options.timeoutMs),
      });
      text = await readBounded(response, max);
    } catch (err) {
      if (err instanceof ProblemError) throw err;
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      throw new ProblemError(
        'unavailable',
        timedOut ? 'crm-sink did not answer the connection check in time; try again.' : 'crm-sink cannot be reached for connection checks; try again later.',
      );
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (response.status === 200 && parsed !== undefined) return parsed as T;
    const kind = PASSED_ON[response.status];
    const detail =
      typeof parsed === 'object' && parsed !== null && typeof (parsed as { detail?: unknown }).detail === 'string'
        ? (parsed as { detail: string }).detail
        : undefined;
    if (kind && detail) {
      const retryAfter = response.headers.get('retry-after');
      throw new ProblemError(
        kind,
        detail.slice(0, 600),
        kind === 'rateLimited' && retryAfter && /^\d+$/.test(retryAfter) ? { headers: { 'retry-after': retryAfter } } : {},
      );
    }
    // 401 (tokens differ between console and crm-sink) and anything else: the operator's to fix.
    throw new ProblemError('unavailable', `Connection checks are unavailable (crm-sink answered ${response.status}); try again later.`);
  }

  return {
    available: options.token !== '',
    test: (request) => post<ConnectionTestResult>('test', request),
    properties: (request) => post<CrmPropertyList>('properties', request),
  };
}

/** The channel as the console's configuration sets it (one place for the admin app and the dashboard). */
export function connectionChannelFromConfig(
  config: Pick<ConsoleConfig, 'CRM_SINK_INTERNAL_URL' | 'CRM_SINK_INTERNAL_TOKEN' | 'CRM_SINK_INTERNAL_TIMEOUT_MS'>,
): ConnectionChannel {
  return createConnectionChannel({ url: config.CRM_SINK_INTERNAL_URL, token: config.CRM_SINK_INTERNAL_TOKEN, timeoutMs: config.CRM_SINK_INTERNAL_TIMEOUT_MS });
}
