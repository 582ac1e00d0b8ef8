import { useCallback, useEffect, useState } from 'react';
import { api } from './api.js';
import { ActivityPage } from './pages/ActivityPage';
import { ConnectionsPage } from './pages/ConnectionsPage';
import { EventsPage } from './pages/EventsPage';
import { JobsPage } from './pages/JobsPage';
import { KeysPage } from './pages/KeysPage';
import { MappingsPage } from './pages/MappingsPage';
import { SecurityPage } from './pages/SecurityPage';
import { SignInPage } from './pages/SignInPage';
import { SyncHealthPage } from './pages/SyncHealthPage';
import { UsagePage } from './pages/UsagePage';
import type { SessionView } from './types.js';

/** Pages by path under /dashboard/; a page marked `soon` is shown, not linked. */
const PAGES = [
  { path: 'keys', label: 'API keys' },
  { path: 'usage', label: 'Usage' },
  { path: 'jobs', label: 'Jobs' },
  { path: 'connections', label: 'CRM connections' },
  { path: 'mappings', label: 'CRM mapping' },
  { path: 'sync-health', label: 'Sync health' },
  { path: 'events', label: 'Event debugger' },
  { path: 'activity', label: 'Activity' },
  { path: 'security', label: 'Security' },
] as const;

function currentPage(): string {
  const rest = window.location.pathname.replace(/^\/dashboard\/?/, '').split('/')[0] ?? '';
  return PAGES.some((p) => p.path === rest && !('soon' in p)) ? rest : 'keys';
}

export function App() {
  const [session, setSession] = useState<SessionView | null | undefined>(undefined);
  const [page, setPage] = useState(currentPage);

  useEffect(() => {
    api.session().then(setSession, () => setSession(null));
    const onPop = () => setPage(currentPage());
    window.addEventListener('popstate', onPop);
    return () => window.removeEventListener('popstate', onPop);
  }, []);

  useEffect(() => {
    const label = PAGES.find((p) => p.path === page)?.label ?? '';
    document.title = session ? `${label} · Event ingestion dashboard` : 'Sign in · Event ingestion dashboard';
  }, [page, session]);

  const navigate = useCallback((path: string) => {
    window.history.pushState(null, '', `/dashboard/${path}`);
    setPage(path);
    document.getElementById('main')?.focus();
  }, []);

  if (session === undefined) return <p className="loading">Loading…</p>;
  if (session === null) return <SignInPage onSignedIn={setSession} />;

  const signOut = async () => {
    await api.signOut().catch(() => undefined);
    setSession(null);
  };

  // The account requires a second factor this owner lacks: the server opens only enrolment.
  if (session.secondFactorSetupRequired) {
    return (
      <main id="main" className="signin">
        <SecurityPage onChanged={() => void api.session().then((s) => s && setSession(s))} />
        <button type="button" className="link" onClick={signOut}>
          Sign out
        </button>
      </main>
    );
  }

  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="top">
        <span className="brand">Event ingestion</span>
        <span className="who">
          {session.account.name} · {session.email}
        </span>
        <button type="button" className="link" onClick={signOut}>
          Sign out
        </button>
      </header>
      <nav aria-label="Dashboard">
        <ul>
          {PAGES.map((p) => (
            <li key={p.path}>
              {'soon' in p ? (
                <span className="soon" aria-disabled="true">
                  {p.label} <small>(soon)</small>
                </span>
              ) : (
                <a
                  href={`/dashboard/${p.path}`}
                  aria-current={page === p.path ? 'page' : undefined}
                  onClick={(e) => {
                    e.preventDefault();
                    navigate(p.path);
                  }}
                >
                  {p.label}
                </a>
              )}
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        {page === 'keys' && <KeysPage />}
        {page === 'usage' && <UsagePage />}
        {page === 'jobs' && <JobsPage />}
        {page === 'connections' && <ConnectionsPage />}
        {page === 'mappings' && <MappingsPage />}
        {page === 'sync-health' && <SyncHealthPage />}
        {page === 'events' && <EventsPage />}
        {page === 'activity' && <ActivityPage />}
        {page === 'security' && <SecurityPage />}
      </main>
    </div>
  );
}
