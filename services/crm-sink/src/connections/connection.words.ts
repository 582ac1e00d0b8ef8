import { CrmError } from '@ingest/domain';
import type { ConnectionTestResult } from '@ingest/schemas';

/**
 * A CRM's answer in words an owner can act on ("HubSpot refused the token (401): expired or
 * revoked"), from the CrmError the HTTP client classified. The CRM's own message follows,
 * already bounded and stripped of secrets by the client (crm-errors.ts `safeMessage`).
 */
export const CRM_NAMES = { hubspot: 'HubSpot', salesforce: 'Salesforce', webhook: 'The webhook receiver' } as const;
type CrmType = keyof typeof CRM_NAMES;

export type PlainAnswer = Pick<ConnectionTestResult, 'outcome' | 'message'> & { status?: number };

const REFUSED: Record<CrmType, Record<number, string>> = {
  hubspot: {
    401: 'HubSpot refused the token (401): expired or revoked, or not a private-app token',
    403: 'HubSpot refused the token (403): the private app lacks a scope this needs (crm.objects.contacts, crm.objects.companies, crm.schemas.*.read)',
  },
  salesforce: {
    401: 'Salesforce refused the access token (401): the session expired or was revoked',
    403: 'Salesforce refused the request (403): the user lacks "API Enabled" or access to the object',
  },
  webhook: {
    401: 'The webhook receiver refused the delivery (401): it does not verify the signature with the secret stored here',
    403: 'The webhook receiver refused the delivery (403)',
  },
};

/** The text after "answered NNN" in the client's message: the CRM's own words, if it gave any. */
function crmOwnWords(err: CrmError): string | undefined {
  const match = /answered \d{3}: (.+)$/.exec(err.message);
  return match?.[1];
}

export const inPlainWords = {
  connected(crm: CrmType, status: number): string {
    if (crm === 'webhook') return `The webhook receiver accepted a signed test delivery (${status}).`;
    return `${CRM_NAMES[crm]} accepted the ${crm === 'hubspot' ? 'token' : 'access token'} (${status}).`;
  },

  noProperties(crm: CrmType): string {
    return `${CRM_NAMES[crm]} has no object properties to read: a webhook receives whatever the mapping sends.`;
  },

  failure(crm: CrmType, err: unknown): PlainAnswer {
    const name = CRM_NAMES[crm];
    if (!(err instanceof CrmError)) return { outcome: 'failed', message: `${name} could not be checked: an internal error (see crm-sink's log).` };
    const own = crmOwnWords(err);
    const withOwn = (text: string) => (own ? `${text}. ${name.replace(/^The w/, 'W')} said: ${own}` : `${text}.`);
    const status = err.status;
    if (err.kind === 'forbidden')
      return { outcome: 'unreachable', message: `${err.message}. Change the URL; private, loopback and link-local addresses are never called.` };
    if (status === undefined || status === 0) {
      if (/over \d+ bytes/.test(err.message)) return { outcome: 'failed', message: `${err.message}.` };
      const timedOut = /timed out|ETIMEDOUT|UND_ERR_.*TIMEOUT/i.test(err.message);
      return {
        outcome: 'unreachable',
        message: timedOut ? `${name} did not answer in time: ${err.message}.` : `${name} could not be reached: ${err.message}.`,
      };
    }
    if (status === 401 || status === 403) return { outcome: 'refused', status, message: withOwn(REFUSED[crm][status] as string) };
    if (/over \d+ bytes/.test(err.message)) return { outcome: 'failed', status, message: `${err.message}.` };
    if (err.kind === 'rate_limited') {
      const wait = err.retryAfterMs !== undefined ? `; try again in ${Math.ceil(err.retryAfterMs / 1000)} s` : '';
      return { outcome: 'failed', status, message: withOwn(`${name} is rate-limiting this account (${status})${wait}`) };
    }
    if (status >= 300 && status < 400)
      return { outcome: 'failed', status, message: `${name} answered a redirect (${status}), which is never followed: use the final URL.` };
    if (status === 404)
      return { outcome: 'failed', status, message: withOwn(`${name} answered 404: check the URL${crm === 'salesforce' ? ' and the API version' : ''}`) };
    if (status >= 500) return { outcome: 'failed', status, message: withOwn(`${name} had a server error (${status}); try again later`) };
    return { outcome: 'failed', status, message: withOwn(`${name} answered ${status}`) };
  },
};
