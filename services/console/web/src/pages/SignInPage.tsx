import { type FormEvent, useState } from 'react';
import { api } from '../api.js';
import type { SessionView } from '../types.js';

export function SignInPage({ onSignedIn }: { onSignedIn: (s: SessionView) => void }) {
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);

  const submit = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = new FormData(e.currentTarget);
    setBusy(true);
    setError('');
    try {
      onSignedIn(await api.signIn(String(form.get('email') ?? ''), String(form.get('password') ?? '')));
    } catch (err) {
      setError(err instanceof Error ? err.message : 'Sign-in failed.');
    } finally {
      setBusy(false);
    }
  };

  return (
    <main className="signin" id="main">
      <h1>Sign in to your dashboard</h1>
      <form onSubmit={submit} aria-describedby={error ? 'signin-error' : undefined}>
        <label htmlFor="email">Email</label>
        <input id="email" name="email" type="email" autoComplete="username" required autoFocus />
        <label htmlFor="password">Password</label>
        <input id="password" name="password" type="password" autoComplete="current-password" required />
        {error && (
          <p id="signin-error" className="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
