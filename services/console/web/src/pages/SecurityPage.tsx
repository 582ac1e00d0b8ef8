import { type FormEvent, useCallback, useEffect, useState } from 'react';
import { api } from '../api.js';
import type { TotpStatus } from '../types.js';

/**
 * The owner's second factor: enrol an authenticator app (scan the QR code or type the secret,
 * then prove it with a code), see the recovery codes once, remove it; and the account's
 * requirement that every owner has one.
 */
export function SecurityPage({ onChanged }: { onChanged?: () => void }) {
  const [status, setStatus] = useState<TotpStatus | null>(null);
  const [enrolment, setEnrolment] = useState<{ secret: string; uri: string; qr: string } | null>(null);
  const [recoveryCodes, setRecoveryCodes] = useState<string[] | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const load = useCallback(() => api.totp().then(setStatus, (err: Error) => setError(err.message)), []);
  useEffect(() => {
    void load();
  }, [load]);

  const run = async (action: () => Promise<void>) => {
    setBusy(true);
    setError('');
    try {
      await action();
    } catch (err) {
      setError(err instanceof Error ? err.message : 'The request failed.');
    } finally {
      setBusy(false);
    }
  };

  const start = () =>
    run(async () => {
      const started = await api.startTotp();
      // Loaded on demand: the QR encoder is not part of the dashboard's first load.
      const { toDataURL } = await import('qrcode');
      setEnrolment({ ...started, qr: await toDataURL(started.uri, { margin: 1, width: 200 }) });
    });

  const confirm = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const code = String(new FormData(e.currentTarget).get('code') ?? '').trim();
    return run(async () => {
      const { recoveryCodes: codes } = await api.confirmTotp(code);
      await load();
      setEnrolment(null);
      setRecoveryCodes(codes);
      onChanged?.();
    });
  };

  const remove = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const code = String(new FormData(e.currentTarget).get('code') ?? '').trim();
    return run(async () => {
      await api.removeTotp(code);
      setRecoveryCodes(null);
      await load();
    });
  };

  const setRequired = (required: boolean) =>
    run(async () => {
      setStatus(await api.setRequireTotp(required));
    });

  if (!status && !error) return <p>Loading…</p>;

  return (
    <section aria-labelledby="security-title">
      <h1 id="security-title">Security</h1>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {status && (
        <>
          <h2>Two-step sign-in</h2>
          {status.accountRequiresTotp && !status.enabled && (
            <p className="banner warn" role="alert">
              This account requires an authenticator app for every owner: set one up to use the dashboard.
            </p>
          )}
          {recoveryCodes && (
            <div className="secret">
              <p>Recovery codes: each signs you in once if you lose your phone. Keep them somewhere safe; they are shown only now.</p>
              <ul data-testid="recovery-codes">
                {recoveryCodes.map((c) => (
                  <li key={c}>
                    <code>{c}</code>
                  </li>
                ))}
              </ul>
            </div>
          )}
          {status.enabled ? (
            <>
              <p data-testid="totp-status">On: sign-in asks for a code from your authenticator app. Recovery codes left: {status.recoveryCodesLeft}.</p>
              <form onSubmit={remove}>
                <label htmlFor="remove-code">Current code, to turn it off</label>
                <input id="remove-code" name="code" inputMode="numeric" autoComplete="one-time-code" required />
                <button type="submit" disabled={busy || status.accountRequiresTotp}>
                  Turn off
                </button>
              </form>
            </>
          ) : enrolment ? (
            <form onSubmit={confirm}>
              <p>Scan this code with an authenticator app, or enter the key by hand.</p>
              <img src={enrolment.qr} alt="QR code for your authenticator app" width={200} height={200} />
              <p>
                Key: <code data-testid="totp-secret">{enrolment.secret}</code>
              </p>
              <label htmlFor="enrol-code">Code shown by the app</label>
              <input id="enrol-code" name="code" inputMode="numeric" autoComplete="one-time-code" required autoFocus />
              <button type="submit" disabled={busy}>
                Turn on
              </button>
            </form>
          ) : (
            <>
              <p data-testid="totp-status">Off: sign-in asks for your password only.</p>
              <button type="button" onClick={start} disabled={busy}>
                Set up an authenticator app
              </button>
            </>
          )}
          <h2>Account</h2>
          <label>
            <input
              type="checkbox"
              checked={status.accountRequiresTotp}
              disabled={busy || (!status.enabled && !status.accountRequiresTotp)}
              onChange={(e) => setRequired(e.currentTarget.checked)}
            />{' '}
            Require every owner of this account to sign in with an authenticator app
          </label>
        </>
      )}
    </section>
  );
}
