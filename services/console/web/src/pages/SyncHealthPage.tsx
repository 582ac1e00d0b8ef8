import { useCallback, useEffect, useState } from 'react';
import { api } from '../api.js';
import { formatDate, formatNumber } from '../format.js';
import { OutcomeChart } from '../OutcomeChart';
import { stateWords } from '../sync-health-words.js';
import type { DashboardSyncHealth } from '../types.js';

/** How often the page reads the health again while open. */
const REFRESH_MS = 15_000;

export function SyncHealthPage() {
  const [health, setHealth] = useState<DashboardSyncHealth | null>(null);
  const [error, setError] = useState('');
  const [loadedAt, setLoadedAt] = useState<Date | null>(null);

  const load = useCallback(() => {
    api.syncHealth().then(
      (h) => {
        setHealth(h);
        setError('');
        setLoadedAt(new Date());
      },
      (err: Error) => setError(err.message),
    );
  }, []);

  useEffect(() => {
    load();
    const timer = setInterval(load, REFRESH_MS);
    return () => clearInterval(timer);
  }, [load]);

  if (error && !health)
    return (
      <p className="error" role="alert">
        {error}
      </p>
    );
  if (!health) return <p>Loading…</p>;
  const { current, last24h } = health;
  const words = stateWords(current);

  return (
    <section aria-labelledby="sync-health-title">
      <h1 id="sync-health-title">Sync health</h1>
      <div className={`banner ${words.tone}`} role="status" aria-live="polite">
        <p data-testid="sync-state">{words.headline}</p>
        {current?.reason ? <p data-testid="sync-reason">Why: {current.reason}</p> : null}
        <p className="hint">{words.advice}</p>
      </div>
      <dl className="figures">
        <div>
          <dt>Last success</dt>
          <dd data-testid="last-success">{current?.lastSuccessAt ? formatDate(current.lastSuccessAt) : 'never'}</dd>
        </div>
        <div>
          <dt>Last failure</dt>
          <dd data-testid="last-failure">{current?.lastFailureAt ? formatDate(current.lastFailureAt) : 'none'}</dd>
        </div>
        {current && current.state !== 'running' ? (
          <div>
            <dt>Not syncing since</dt>
            <dd>{formatDate(current.unhealthySince ?? current.since)}</dd>
          </div>
        ) : null}
      </dl>
      <h2>Last 24 hours</h2>
      <dl className="figures">
        <div>
          <dt>Synced</dt>
          <dd data-testid="synced-24h">{formatNumber(last24h.synced)}</dd>
        </div>
        <div>
          <dt>Skipped (nothing to sync)</dt>
          <dd data-testid="skipped-24h">{formatNumber(last24h.skipped)}</dd>
        </div>
        <div>
          <dt>Failed</dt>
          <dd data-testid="failed-24h">{formatNumber(last24h.failed)}</dd>
        </div>
      </dl>
      <h2>Events per hour, last 7 days (UTC)</h2>
      <OutcomeChart hours={health.hours} />
      <p className="hint">
        {loadedAt ? `Updated ${loadedAt.toLocaleTimeString()}; refreshes every ${REFRESH_MS / 1000} s. ` : ''}
        <button type="button" className="link" onClick={load}>
          Refresh now
        </button>
      </p>
      {error ? (
        <p className="error" role="alert">
          {error}
        </p>
      ) : null}
    </section>
  );
}
