import { type FormEvent, useState } from 'react';
import { api, ApiError } from '../api.js';
import type { SessionView } from '../types.js';

/**
 * Email and password; for an owner with a second factor the server answers
 * second-factor-required and the page asks for the authenticator code (or a recovery code),
 * sending the password again with it: nothing is half signed in between the two steps.
 */
export function SignInPage({ onSignedIn }: { onSignedIn: (s: SessionView) => void }) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [credentials, setCredentials] = useState<{ email: string; password: string } | null>(null);
  const [useRecovery, setUseRecovery] = useState(false);

  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    const given = credentials ?? { email: String(form.get('email') ?? ''), password: String(form.get('password') ?? '') };
    const code = String(form.get('code') ?? '').trim();
    setBusy(true);
    setError('');
    try {
      onSignedIn(await signInRetryingWhileBusy(given.email, given.password, credentials ? (useRecovery ? { recoveryCode: code } : { totpCode: code }) : {}));
    } catch (err) {
      if (!credentials && err instanceof ApiError && err.extensions.type === '/problems/second-factor-required') {
        setCredentials(given);
        return;
      }
      setError(err instanceof Error ? err.message : 'Sign-in failed.');
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="signin" id="main">
      <h1>Sign in to your dashboard</h1>
      <form onSubmit={submit} aria-describedby={error ? 'signin-error' : undefined}>
        {credentials ? (
          <>
            <label htmlFor="code">{useRecovery ? 'Recovery code' : 'Authentication code'}</label>
            <input
              id="code"
              name="code"
              key={useRecovery ? 'recovery' : 'totp'}
              inputMode={useRecovery ? 'text' : 'numeric'}
              autoComplete="one-time-code"
              pattern={useRecovery ? undefined : '[0-9 ]{6,7}'}
              required
              autoFocus
            />
            <button type="button" className="link" onClick={() => setUseRecovery(!useRecovery)}>
              {useRecovery ? 'Use the authenticator app instead' : 'Use a recovery code instead'}
            </button>
          </>
        ) : (
          <>
            <label htmlFor="email">Email</label>
            <input id="email" name="email" type="email" autoComplete="username" required autoFocus />
            <label htmlFor="password">Password</label>
            <input id="password" name="password" type="password" autoComplete="current-password" required />
          </>
        )}
        {error && (
          <p id="signin-error" className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : credentials ? 'Verify' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

/** The console answers 503 (Retry-After: 1) while its password hashes are all busy: try again a few times. */
async function signInRetryingWhileBusy(email: string, password: string, codes: { totpCode?: string; recoveryCode?: string }): Promise<SessionView> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await api.signIn(email, password, codes);
    } catch (err) {
      const busy = err instanceof ApiError && err.status === 503 && err.extensions.limit === 'concurrent password hashes';
      if (!busy || attempt >= 3) throw err;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  }
}
