import { type FormEvent, useCallback, useEffect, useRef, useState } from 'react';
import { api } from '../api.js';
import { formatDate } from '../format.js';
import type { KeyView } from '../types.js';

/** What each scope allows, as the docs say (docs/access-control.md). */
const SCOPES = [
  { id: 'events:write', label: 'Send events (events, bulk, CSV, job status)' },
  { id: 'events:read', label: 'Read events back (GET /v1/events/{id})' },
  { id: 'usage:read', label: 'Read usage (GET /v1/usage)' },
] as const;
const DEFAULT_SCOPES = new Set(['events:write', 'usage:read']);

export function KeysPage() {
  const [keys, setKeys] = useState<KeyView[] | null>(null);
  const [error, setError] = useState('');
  const [created, setCreated] = useState<string | null>(null);
  const [copied, setCopied] = useState(false);
  const [revoking, setRevoking] = useState<KeyView | null>(null);
  const [publishable, setPublishable] = useState(false);
  const dialog = useRef<HTMLDialogElement>(null);

  const load = useCallback(() => {
    api.keys().then(
      (r) => setKeys(r.keys),
      (err: Error) => setError(err.message),
    );
  }, []);
  useEffect(load, [load]);

  useEffect(() => {
    if (revoking) dialog.current?.showModal();
    else dialog.current?.close();
  }, [revoking]);

  const create = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    const data = new FormData(form);
    const name = String(data.get('name') ?? '').trim();
    const scopes = data.getAll('scope').map(String);
    setError('');
    try {
      const result = await api.createKey(name, publishable ? { type: 'publishable' } : { scopes, type: 'secret' });
      setCreated(result.apiKey);
      setCopied(false);
      form.reset();
      setPublishable(false);
      load();
    } catch (err) {
      setError((err as Error).message);
    }
  };

  const revoke = async () => {
    if (!revoking) return;
    try {
      await api.revokeKey(revoking.id);
      load();
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setRevoking(null);
    }
  };

  const copy = async () => {
    if (!created) return;
    await navigator.clipboard.writeText(created).then(
      () => setCopied(true),
      () => setCopied(false),
    );
  };

  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <form className="inline" onSubmit={create}>
        <label htmlFor="key-name">New key name</label>
        <input id="key-name" name="name" required maxLength={200} placeholder="e.g. backend" />
        <fieldset>
          <legend>Key type</legend>
          <label>
            <input type="radio" name="type" value="secret" checked={!publishable} onChange={() => setPublishable(false)} /> Secret (servers)
          </label>
          <label>
            <input type="radio" name="type" value="publishable" checked={publishable} onChange={() => setPublishable(true)} /> Publishable (browsers: send
            events only, from your allowed origins)
          </label>
        </fieldset>
        <fieldset disabled={publishable}>
          <legend>Scopes</legend>
          {SCOPES.map((s) => (
            <label key={s.id}>
              <input type="checkbox" name="scope" value={s.id} defaultChecked={DEFAULT_SCOPES.has(s.id)} /> {s.label}
            </label>
          ))}
        </fieldset>
        <button type="submit">Create key</button>
      </form>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {created && (
        <div className="notice" role="status">
          <p>
            <strong>Copy your new key now.</strong> It is shown only once.
          </p>
          <p className="secret">
            <code data-testid="new-key">{created}</code>
            <button type="button" onClick={copy}>
              {copied ? 'Copied' : 'Copy'}
            </button>
          </p>
        </div>
      )}
      {keys === null ? (
        <p>Loading…</p>
      ) : keys.length === 0 ? (
        <p>No keys yet.</p>
      ) : (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Your API keys</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Key</th>
                <th scope="col">Access</th>
                <th scope="col">Created</th>
                <th scope="col">Last used</th>
                <th scope="col">Status</th>
              </tr>
            </thead>
            <tbody>
              {keys.map((k) => (
                <tr key={k.id}>
                  <td>{k.name}</td>
                  <td>
                    <code>{k.prefix}…</code>
                  </td>
                  <td data-testid="key-access">
                    {k.type === 'publishable' ? 'publishable: ' : ''}
                    {(k.scopes ?? []).join(', ')}
                  </td>
                  <td>{formatDate(k.createdAt)}</td>
                  <td>{k.lastUsedAt ? formatDate(k.lastUsedAt) : 'never'}</td>
                  <td>
                    {k.revokedAt ? (
                      <span className="badge">revoked</span>
                    ) : (
                      <button type="button" className="danger" onClick={() => setRevoking(k)} aria-label={`Revoke key ${k.name}`}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <dialog ref={dialog} aria-labelledby="revoke-title" onClose={() => setRevoking(null)}>
        <h2 id="revoke-title">Revoke key “{revoking?.name}”?</h2>
        <p>Requests with this key will be refused with 401 within seconds. This cannot be undone.</p>
        <div className="actions">
          <button type="button" onClick={() => setRevoking(null)} autoFocus>
            Cancel
          </button>
          <button type="button" className="danger" onClick={revoke}>
            Revoke key
          </button>
        </div>
      </dialog>
    </section>
  );
}
