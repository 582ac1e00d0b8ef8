/**
 * One HTTP exchange with the API through `fetch` (Node 22+ and browsers alike): the body
 * gzipped with `CompressionStream` (a global in both, so the browser build pulls in no zlib),
 * a deadline over the whole exchange (headers and body), and an answer read up to a bound, so
 * a server that hangs, resets or answers megabytes of garbage costs a timeout and a bounded
 * buffer, never a hang or unbounded memory.
 */
export interface TransportOptions {
  baseUrl: string;
  apiKey: string;
  /** Deadline of one request, answer included. */
  timeoutMs: number;
  /** `gzip` (default) or `none`. */
  compression: 'gzip' | 'none';
  /** Bodies smaller than this go uncompressed: gzip's 18-byte frame and the CPU buy nothing there. */
  compressMinBytes: number;
  fetch: typeof fetch;
  /** `fetch(…, { keepalive: true })`: the request outlives the page (browsers cap such bodies at 64 KiB in all). */
  keepalive?: boolean;
}

export type Exchange = { kind: 'answer'; status: number; headers: Headers; body: unknown; rawLength: number } | { kind: 'network'; error: Error };

/** Answers larger than this are not read further (the API's own answers are a few KB at most). */
const MAX_ANSWER_BYTES = 1024 * 1024;

export async function gzip(bytes: Uint8Array): Promise<Uint8Array> {
  const stream = new Blob([bytes as Uint8Array<ArrayBuffer>]).stream().pipeThrough(new CompressionStream('gzip'));
  return new Uint8Array(await new Response(stream).arrayBuffer());
}

async function readBounded(response: Response): Promise<{ text: string; length: number }> {
  const reader = response.body?.getReader();
  if (!reader) return { text: '', length: 0 };
  const chunks: Uint8Array[] = [];
  let length = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    length += value.byteLength;
    if (length > MAX_ANSWER_BYTES) {
      await reader.cancel();
      throw new Error(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    }
    chunks.push(value);
  }
  const all = new Uint8Array(length);
  let at = 0;
  for (const c of chunks) {
    all.set(c, at);
    at += c.byteLength;
  }
  return { text: new TextDecoder().decode(all), length };
}

export interface PreparedBody {
  body: Uint8Array | FormData;
  contentType?: string;
  encoding?: 'gzip';
}

/** The JSON body, gzipped when that is on and worth it. */
export async function prepareJson(options: TransportOptions, value: unknown): Promise<PreparedBody> {
  const json = new TextEncoder().encode(JSON.stringify(value));
  if (options.compression === 'gzip' && json.byteLength >= options.compressMinBytes) {
    return { body: await gzip(json), contentType: 'application/json', encoding: 'gzip' };
  }
  return { body: json, contentType: 'application/json' };
}

export async function exchange(
  options: TransportOptions,
  request: { method: 'GET' | 'POST'; path: string; body?: PreparedBody; headers?: Record<string, string>; signal?: AbortSignal },
): Promise<Exchange> {
  const headers: Record<string, string> = { authorization: `Bearer ${options.apiKey}`, accept: 'application/json', ...request.headers };
  if (request.body?.contentType) headers['content-type'] = request.body.contentType;
  if (request.body?.encoding) headers['content-encoding'] = request.body.encoding;
  const deadline = AbortSignal.timeout(options.timeoutMs);
  const signal = request.signal ? AbortSignal.any([deadline, request.signal]) : deadline;
  try {
    // Relative to the base URL, keeping a path prefix it may have (`/v1/events` → `v1/events`).
    const response = await options.fetch(new URL(request.path.replace(/^\//, ''), options.baseUrl), {
      method: request.method,
      headers,
      ...(request.body ? { body: request.body.body as NonNullable<RequestInit['body']> } : {}),
      signal,
      ...(options.keepalive ? { keepalive: true } : {}),
    });
    const { text, length } = await readBounded(response);
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = undefined; // garbage: the caller decides what an unreadable answer means for its status
    }
    return { kind: 'answer', status: response.status, headers: response.headers, body, rawLength: length };
  } catch (err) {
    const error = err instanceof Error ? err : new Error(String(err));
    if (deadline.aborted) return { kind: 'network', error: new Error(`no complete answer within ${options.timeoutMs} ms`, { cause: error }) };
    return { kind: 'network', error };
  }
}
