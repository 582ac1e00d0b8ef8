import { describe, expect, it } from 'vitest';
import { crmCredentialErrors } from './crm-config.ops.js';

const oauth = { v: 1, kind: 'oauth', clientId: 'cid', connectionId: '0123456789abcdef' };
const jwt = { v: 1, kind: 'jwt-bearer', clientId: 'consumer-key', username: 'sync@acme.example' };
const fields = (credential: unknown) => crmCredentialErrors('main', credential).map((e) => e.field);

describe('credentials with auth (admin API and the dashboard write path)', () => {
  it('accepts bare tokens and webhooks as before', () => {
    expect(fields({ type: 'hubspot', accessToken: 'pat' })).toEqual([]);
    expect(fields({ type: 'salesforce', instanceUrl: 'https://acme.my.salesforce.com', accessToken: 't' })).toEqual([]);
    expect(fields({ type: 'webhook', url: 'https://example.com/hook', secret: 'whsec' })).toEqual([]);
  });

  it('accepts an OAuth credential with both tokens and a JWT bearer one with its key, and nothing half-made', () => {
    expect(fields({ type: 'hubspot', accessToken: 'at', refreshToken: 'rt', auth: oauth })).toEqual([]);
    expect(fields({ type: 'salesforce', instanceUrl: 'https://acme.my.salesforce.com', privateKey: 'PEM', auth: jwt })).toEqual([]);
    expect(fields({ type: 'hubspot', accessToken: 'at', auth: oauth })).toEqual(['/refreshToken']);
    expect(fields({ type: 'salesforce', instanceUrl: 'https://acme.my.salesforce.com', auth: jwt })).toEqual(['/privateKey']);
    expect(fields({ type: 'salesforce', instanceUrl: 'https://acme.my.salesforce.com' })).toEqual(['/accessToken']);
    expect(fields({ type: 'hubspot', accessToken: 'at', refreshToken: 'rt' })).toEqual(['/auth']);
  });

  it('refuses jwt-bearer for HubSpot, an unknown auth version and unknown auth fields (request bodies are strict)', () => {
    expect(fields({ type: 'hubspot', accessToken: 'at', privateKey: 'PEM', auth: jwt }).length).toBeGreaterThan(0);
    expect(fields({ type: 'hubspot', accessToken: 'at', refreshToken: 'rt', auth: { ...oauth, v: 2 } }).length).toBeGreaterThan(0);
    expect(fields({ type: 'hubspot', accessToken: 'at', refreshToken: 'rt', auth: { ...oauth, extra: 1 } }).length).toBeGreaterThan(0);
  });
});
