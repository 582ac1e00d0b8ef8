import { randomBytes } from 'node:crypto';
import {
  buildConnectionTestRequest,
  buildPropertiesRequest,
  connectionTestPayload,
  CrmError,
  type CrmCredential,
  type CrmObject,
  type CrmPropertyList,
  HUBSPOT_DEFAULT_BASE_URL,
  normaliseHubSpotProperties,
  normaliseSalesforceDescribe,
  signWebhook,
  standardWebhookHeaders,
  WEBHOOK_SIGNATURE_HEADER,
} from '@ingest/domain';
import type { ConnectionTestResult } from '@ingest/schemas';
import { describeHubSpotError } from '../adapters/hubspot.adapter.js';
import { type AdapterHttpOptions, type BearerSource, type CrmHttpClient, createCrmHttpClient } from '../adapters/http.client.js';
import { describeSalesforceError } from '../adapters/salesforce.adapter.js';
import { CRM_NAMES, inPlainWords, type PlainAnswer } from './connection.words.js';

/**
 * The two operations of the connection channel, run with a credential crm-sink has opened:
 * `test` makes one harmless authenticated call (HubSpot account details, Salesforce org limits,
 * a signed `connection.test` delivery to a webhook) and `properties` reads an object's
 * properties (HubSpot properties API, Salesforce describe). Both go through the sink's HTTP
 * client: the outbound address policy on every connect, no redirects, and the channel's own
 * (shorter) timeout and answer cap. A client lives for one check and is closed after it.
 */
export interface ConnectionChecks {
  /** `bearer`: an OAuth/JWT bearer credential's current token (the sink's token manager), not the record's first one. */
  test(credential: CrmCredential, bearer?: BearerSource): Promise<ConnectionTestResult>;
  /** The list, or the CRM's refusal in plain words. */
  properties(credential: CrmCredential, object: CrmObject, bearer?: BearerSource): Promise<{ list: CrmPropertyList } | { failure: PlainAnswer }>;
}

export function createConnectionChecks(httpOptions: AdapterHttpOptions, now: () => number = Date.now): ConnectionChecks {
  function client(credential: CrmCredential, bearer: BearerSource | undefined): CrmHttpClient {
    // One connection: a check makes one call.
    const common = { ...httpOptions, connections: 1, ...(bearer ? { bearer } : {}) };
    switch (credential.type) {
      case 'hubspot':
        return createCrmHttpClient({
          ...common,
          crm: CRM_NAMES.hubspot,
          baseUrl: credential.baseUrl ?? HUBSPOT_DEFAULT_BASE_URL,
          headers: { authorization: `Bearer ${credential.accessToken}` },
          secrets: [credential.accessToken],
          describeError: describeHubSpotError,
        });
      case 'salesforce':
        return createCrmHttpClient({
          ...common,
          crm: CRM_NAMES.salesforce,
          baseUrl: credential.instanceUrl,
          headers: { authorization: `Bearer ${credential.accessToken}` },
          secrets: [credential.accessToken],
          describeError: describeSalesforceError,
        });
      case 'webhook':
        return createCrmHttpClient({
          ...common,
          crm: CRM_NAMES.webhook,
          baseUrl: credential.url,
          headers: { 'user-agent': 'ingest-crm-sink' },
          secrets: credential.previousSecret ? [credential.secret, credential.previousSecret] : [credential.secret],
          describeError: (_status, body) => ({ message: typeof body === 'string' ? body : undefined }),
        });
    }
  }

  async function withClient<T>(credential: CrmCredential, bearer: BearerSource | undefined, run: (http: CrmHttpClient) => Promise<T>): Promise<T> {
    const http = client(credential, bearer);
    try {
      return await run(http);
    } finally {
      await http.close().catch(() => undefined);
    }
  }

  async function test(credential: CrmCredential, bearer?: BearerSource): Promise<ConnectionTestResult> {
    const checkedAt = new Date(now()).toISOString();
    try {
      const status = await withClient(credential, bearer, async (http) => {
        if (credential.type !== 'webhook') return (await http.send(buildConnectionTestRequest(credential) ?? { method: 'GET', path: '' })).status;
        // Signed like every delivery, so the receiver's verification is what is tested.
        const rawBody = JSON.stringify(connectionTestPayload(checkedAt));
        const secrets = credential.previousSecret ? [credential.secret, credential.previousSecret] : [credential.secret];
        const headers = {
          ...standardWebhookHeaders(secrets, `msg_test_${randomBytes(12).toString('base64url')}`, rawBody),
          [WEBHOOK_SIGNATURE_HEADER.toLowerCase()]: signWebhook(secrets, rawBody),
        };
        return (await http.send({ method: 'POST', path: '', body: JSON.parse(rawBody) as unknown }, { rawBody, headers })).status;
      });
      return { v: 1, ok: true, crm: credential.type, outcome: 'connected', status, message: inPlainWords.connected(credential.type, status), checkedAt };
    } catch (err) {
      const answer = inPlainWords.failure(credential.type, err);
      return { v: 1, ok: false, crm: credential.type, ...answer, checkedAt };
    }
  }

  async function properties(
    credential: CrmCredential,
    object: CrmObject,
    bearer?: BearerSource,
  ): Promise<{ list: CrmPropertyList } | { failure: PlainAnswer }> {
    const request = buildPropertiesRequest(credential, object);
    if (!request) return { failure: { outcome: 'failed', message: inPlainWords.noProperties(credential.type) } };
    try {
      const body = await withClient(credential, bearer, async (http) => (await http.send(request)).body);
      const list = credential.type === 'hubspot' ? normaliseHubSpotProperties(object, body) : normaliseSalesforceDescribe(object, body);
      if (!list) throw new CrmError('transient', `${CRM_NAMES[credential.type]} answered a body that is not a property list`);
      return { list };
    } catch (err) {
      return { failure: inPlainWords.failure(credential.type, err) };
    }
  }

  return { test, properties };
}
