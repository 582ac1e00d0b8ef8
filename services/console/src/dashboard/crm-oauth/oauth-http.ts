import type { FormSender, OutboundPolicy } from '@ingest/domain';

const MAX_TOKEN_RESPONSE_BYTES = 64 * 1024;

/**
 * The console's HTTP to the CRMs' token and revocation endpoints (the code exchange). These
 * URLs come from the operator's settings (CRM_OAUTH_*), never from an owner, and are checked
 * against the outbound policy (https unless CRM_ALLOW_HTTP). No redirects, a whole-call
 * timeout, a bounded answer.
 */
export function createConsoleTokenHttp(options: { policy: OutboundPolicy; timeoutMs: number }): FormSender {
  return async (request) => {
    const check = options.policy.checkUrl(request.url);
    if (!check.ok) throw new Error(`token endpoint refused by the outbound address policy: ${check.reason}`);
    const body = request.form ? new URLSearchParams(request.form).toString() : undefined;
    const response = await fetch(request.url, {
      method: request.method,
      headers: { accept: 'application/json', ...(body !== undefined ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      ...(body !== undefined ? { body } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    const reader = response.body?.getReader();
    const chunks: Uint8Array[] = [];
    let size = 0;
    for (;;) {
      const next = reader ? await reader.read() : { done: true as const, value: undefined };
      if (next.done) break;
      size += next.value.byteLength;
      if (size > MAX_TOKEN_RESPONSE_BYTES) {
        await reader?.cancel();
        throw new Error(`token endpoint answered more than ${MAX_TOKEN_RESPONSE_BYTES} bytes`);
      }
      chunks.push(next.value);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    let parsed: unknown;
    try {
      parsed = text.trim() === '' ? undefined : (JSON.parse(text) as unknown);
    } catch {
      parsed = undefined;
    }
    return { status: response.status, body: parsed };
  };
}
