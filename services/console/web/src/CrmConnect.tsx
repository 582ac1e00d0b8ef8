import { useState } from 'react';
import { api } from './api.js';

/**
 * "Connect HubSpot" / "Connect Salesforce": starts the OAuth flow (the server keeps the state
 * and PKCE verifier) and sends the browser to the CRM's consent screen; the CRM sends it back to
 * a page that says whether the connection was stored. The connection is the credential named
 * after the CRM (`hubspot`, `salesforce`), which a mapping's crm.credentialsRef points at.
 */
export function CrmConnect() {
  const [error, setError] = useState<string>();
  async function connect(provider: 'hubspot' | 'salesforce') {
    setError(undefined);
    try {
      const { authorizeUrl } = await api.crmOAuthStart(provider);
      window.location.assign(authorizeUrl);
    } catch (err) {
      setError(err instanceof Error ? err.message : String(err));
    }
  }
  return (
    <section aria-labelledby="crm-connect-title">
      <h2 id="crm-connect-title">Connect a CRM</h2>
      <p>Sign in to your CRM and allow access; the connection renews itself.</p>
      <button type="button" onClick={() => void connect('hubspot')}>
        Connect HubSpot
      </button>{' '}
      <button type="button" onClick={() => void connect('salesforce')}>
        Connect Salesforce
      </button>
      {error && <p role="alert">{error}</p>}
    </section>
  );
}
