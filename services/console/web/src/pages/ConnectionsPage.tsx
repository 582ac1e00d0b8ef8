import { type FormEvent, useCallback, useEffect, useRef, useState } from 'react';
import { api } from '../api.js';
import { CrmConnect } from '../CrmConnect.js';
import { formatDate } from '../format.js';
import type { ConnectionTestResult, ConnectionView, OAuthConnectionHealth } from '../types.js';

type CrmType = ConnectionView['type'];
const TYPES: { id: CrmType; label: string }[] = [
  { id: 'hubspot', label: 'HubSpot (private app token)' },
  { id: 'salesforce', label: 'Salesforce (access token)' },
  { id: 'webhook', label: 'Webhook (signed POSTs)' },
];
const SECRET_LABEL: Record<CrmType, string> = { hubspot: 'Private app access token', salesforce: 'Access token', webhook: 'Signing secret' };

/** `whsec_` + base64 of 32 random bytes: the format Standard Webhooks libraries expect (docs/crm-sync.md). */
function newWebhookSecret(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return `whsec_${btoa(String.fromCharCode(...bytes))}`;
}

const optional = (value: FormDataEntryValue | null) => {
  const text = String(value ?? '').trim();
  return text === '' ? undefined : text;
};

/** The credential body from the form: the type's own fields, empty optional ones left out. */
function credentialFrom(type: CrmType, data: FormData): Record<string, unknown> {
  const secret = String(data.get('secret') ?? '');
  if (type === 'hubspot') return { type, accessToken: secret, baseUrl: optional(data.get('baseUrl')) };
  if (type === 'salesforce') return { type, accessToken: secret, instanceUrl: optional(data.get('instanceUrl')), apiVersion: optional(data.get('apiVersion')) };
  return { type, url: optional(data.get('url')), secret, previousSecret: optional(data.get('previousSecret')) };
}

/** A rotation keeps every non-secret field as it is and replaces the secret. */
function rotated(c: ConnectionView, data: FormData): Record<string, unknown> {
  const secret = String(data.get('secret') ?? '');
  if (c.type === 'hubspot') return { type: c.type, accessToken: secret, baseUrl: c.baseUrl };
  if (c.type === 'salesforce')
    return {
      type: c.type,
      accessToken: secret,
      instanceUrl: c.instanceUrl,
      apiVersion: c.apiVersion,
      contactExternalIdField: c.contactExternalIdField,
      accountExternalIdField: c.accountExternalIdField,
    };
  return { type: c.type, url: c.url, secret, previousSecret: optional(data.get('previousSecret')) };
}

const address = (c: ConnectionView) => c.instanceUrl ?? c.url ?? c.baseUrl ?? 'https://api.hubapi.com';

/**
 * The owner's CRM connections: the credentials their mapping's `credentialsRef` names. Secrets
 * are write-only (typed here, sealed by the server for crm-sink, never shown again); "Test"
 * asks crm-sink to make one harmless call with the stored credential and shows the CRM's answer.
 */
export function ConnectionsPage() {
  const [connections, setConnections] = useState<ConnectionView[] | null>(null);
  const [checksAvailable, setChecksAvailable] = useState(true);
  const [error, setError] = useState('');
  const [type, setType] = useState<CrmType>('hubspot');
  const [generated, setGenerated] = useState('');
  const [results, setResults] = useState<Record<string, ConnectionTestResult | { message: string; ok: false; outcome: 'failed' }>>({});
  const [testing, setTesting] = useState<string | null>(null);
  const [rotating, setRotating] = useState<ConnectionView | null>(null);
  const [removing, setRemoving] = useState<ConnectionView | null>(null);
  const rotateDialog = useRef<HTMLDialogElement>(null);
  const removeDialog = useRef<HTMLDialogElement>(null);

  const [health, setHealth] = useState<Record<string, OAuthConnectionHealth>>({});

  const load = useCallback(() => {
    api.connections().then(
      (r) => {
        setConnections(r.connections);
        setChecksAvailable(r.checksAvailable);
      },
      (err: Error) => setError(err.message),
    );
    // Only OAuth and JWT bearer connections have a health; a refresh the CRM refused for good
    // holds the account's sync until the owner connects again, so the page must say so.
    api.crmOAuthConnections().then(
      (r) => setHealth(Object.fromEntries(r.connections.map((c) => [c.name, c.health]))),
      (err: Error) => setError(err.message),
    );
  }, []);

  const connectAgain = async (c: ConnectionView) => {
    if (c.type === 'webhook') return;
    try {
      const { authorizeUrl } = await api.crmOAuthStart(c.type, c.name);
      window.location.assign(authorizeUrl);
    } catch (err) {
      setError((err as Error).message);
    }
  };
  useEffect(load, [load]);
  useEffect(() => {
    if (rotating) rotateDialog.current?.showModal();
    else rotateDialog.current?.close();
  }, [rotating]);
  useEffect(() => {
    if (removing) removeDialog.current?.showModal();
    else removeDialog.current?.close();
  }, [removing]);

  const add = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    setError('');
    try {
      await api.addConnection(String(data.get('name') ?? '').trim(), credentialFrom(type, data));
      form.reset();
      setGenerated('');
      load();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const test = async (name: string) => {
    setTesting(name);
    try {
      const result = await api.testConnection(name);
      setResults((r) => ({ ...r, [name]: result }));
    } catch (err) {
      setResults((r) => ({ ...r, [name]: { ok: false, outcome: 'failed', message: (err as Error).message } }));
    } finally {
      setTesting(null);
    }
  };

  const rotate = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    if (!rotating) return;
    const data = new FormData(e.currentTarget);
    setError('');
    try {
      await api.rotateConnection(rotating.name, rotated(rotating, data));
      setResults((r) => ({ ...r, [rotating.name]: { ok: false, outcome: 'failed', message: 'Secret replaced: test it again.' } }));
      setRotating(null);
      load();
    } catch (err) {
      setError((err as Error).message);
      setRotating(null);
    }
  };

  const remove = async () => {
    if (!removing) return;
    try {
      await api.removeConnection(removing.name);
      load();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setRemoving(null);
    }
  };

  return (
    <section aria-labelledby="connections-title">
      <h1 id="connections-title">CRM connections</h1>
      <p>
        The credentials the CRM sync writes with; your mapping names one as its <code>credentialsRef</code>. Secrets are write-only: they are encrypted for the
        sync service and never shown again.
      </p>
      {/* OAuth first: a connection that renews itself is what most owners want; the form below takes tokens and webhooks. */}
      <CrmConnect />
      <h2 id="add-connection-title">Add a connection</h2>
      <form className="inline" onSubmit={add} aria-labelledby="add-connection-title">
        <label htmlFor="conn-name">Name</label>
        <input id="conn-name" name="name" required maxLength={64} pattern="[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}" placeholder="e.g. hubspot-main" />
        <label htmlFor="conn-type">CRM</label>
        <select id="conn-type" name="type" value={type} onChange={(e) => setType(e.target.value as CrmType)}>
          {TYPES.map((t) => (
            <option key={t.id} value={t.id}>
              {t.label}
            </option>
          ))}
        </select>
        {type === 'hubspot' && (
          <>
            <label htmlFor="conn-base-url">API base URL (optional)</label>
            <input id="conn-base-url" name="baseUrl" type="url" placeholder="https://api.hubapi.com" />
          </>
        )}
        {type === 'salesforce' && (
          <>
            <label htmlFor="conn-instance-url">Instance URL</label>
            <input id="conn-instance-url" name="instanceUrl" type="url" required placeholder="https://acme.my.salesforce.com" />
            <label htmlFor="conn-api-version">API version (optional)</label>
            <input id="conn-api-version" name="apiVersion" pattern="v?[0-9]+\.[0-9]+" placeholder="60.0" />
          </>
        )}
        {type === 'webhook' && (
          <>
            <label htmlFor="conn-url">Receiver URL</label>
            <input id="conn-url" name="url" type="url" required placeholder="https://example.com/crm-hook" />
          </>
        )}
        <label htmlFor="conn-secret">{SECRET_LABEL[type]}</label>
        <input id="conn-secret" name="secret" type="password" autoComplete="off" required maxLength={4096} defaultValue={generated} key={generated} />
        {type === 'webhook' && (
          <p className="hint">
            <button type="button" onClick={() => setGenerated(newWebhookSecret())}>
              Generate a secret
            </button>{' '}
            {generated && (
              <>
                Give your receiver this secret before saving: <code data-testid="generated-secret">{generated}</code>
              </>
            )}
          </p>
        )}
        <button type="submit">Add connection</button>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {!checksAvailable && <p className="notice">Connection tests are not set up on this installation; connections can still be stored.</p>}
      {connections === null ? (
        <p>Loading…</p>
      ) : connections.length === 0 ? (
        <p>No connections yet.</p>
      ) : (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Your CRM connections</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">CRM</th>
                <th scope="col">Address</th>
                <th scope="col">Last change</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {connections.map((c) => {
                const result = results[c.name];
                const h = health[c.name];
                return (
                  <tr key={c.name} data-testid={`connection-${c.name}`}>
                    <td>
                      {c.name} {c.usedByMapping && <span className="badge">used by the mapping</span>}
                      {h?.state === 'connected' && <span className="badge">renews itself</span>}
                      {h?.state === 'broken' && (
                        <p className="error" role="alert" data-testid={`connection-broken-${c.name}`}>
                          The CRM refused this connection ({h.reason}) on {formatDate(h.since)}; its sync is held until you connect again.{' '}
                          <button type="button" onClick={() => void connectAgain(c)} aria-label={`Connect ${c.name} again`}>
                            Connect again
                          </button>
                        </p>
                      )}
                    </td>
                    <td>{c.type}</td>
                    <td>
                      <code>{address(c)}</code>
                      {c.apiVersion && <> · API {c.apiVersion}</>}
                      {c.signsWithPreviousSecret && <> · signing with the previous secret too</>}
                    </td>
                    <td>{formatDate(c.updatedAt)}</td>
                    <td>
                      <button
                        type="button"
                        onClick={() => test(c.name)}
                        disabled={!checksAvailable || testing === c.name}
                        aria-label={`Test connection ${c.name}`}
                      >
                        {testing === c.name ? 'Testing…' : 'Test'}
                      </button>{' '}
                      <button type="button" onClick={() => setRotating(c)} aria-label={`Rotate the secret of ${c.name}`}>
                        Rotate secret
                      </button>{' '}
                      <button type="button" className="danger" onClick={() => setRemoving(c)} aria-label={`Remove connection ${c.name}`}>
                        Remove
                      </button>
                      {result && (
                        <p role="status" className={result.ok ? 'ok' : 'error'} data-testid={`test-result-${c.name}`}>
                          {result.message}
                        </p>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}
      <dialog ref={rotateDialog} aria-labelledby="rotate-title" onClose={() => setRotating(null)}>
        <form onSubmit={rotate}>
          <h2 id="rotate-title">Rotate the secret of “{rotating?.name}”</h2>
          <p>The new secret replaces the stored one for every sync from now on; the other settings stay as they are.</p>
          <label htmlFor="rotate-secret">New {rotating ? SECRET_LABEL[rotating.type].toLowerCase() : 'secret'}</label>
          <input id="rotate-secret" name="secret" type="password" autoComplete="off" required maxLength={4096} />
          {rotating?.type === 'webhook' && (
            <>
              <label htmlFor="rotate-previous">Previous secret (optional: deliveries are signed with both until you rotate again without it)</label>
              <input id="rotate-previous" name="previousSecret" type="password" autoComplete="off" maxLength={4096} />
            </>
          )}
          <div className="actions">
            <button type="button" onClick={() => setRotating(null)}>
              Cancel
            </button>
            <button type="submit">Replace secret</button>
          </div>
        </form>
      </dialog>
      <dialog ref={removeDialog} aria-labelledby="remove-title" onClose={() => setRemoving(null)}>
        <h2 id="remove-title">Remove connection “{removing?.name}”?</h2>
        {removing?.usedByMapping ? (
          <p>Your current CRM mapping uses this connection, so it cannot be removed: point the mapping at another connection, or delete the mapping, first.</p>
        ) : (
          <p>The credential is deleted for good. A mapping saved later that names it will not sync until it is added again.</p>
        )}
        <div className="actions">
          <button type="button" onClick={() => setRemoving(null)} autoFocus>
            Cancel
          </button>
          <button type="button" className="danger" onClick={remove} disabled={removing?.usedByMapping}>
            Remove connection
          </button>
        </div>
      </dialog>
    </section>
  );
}
