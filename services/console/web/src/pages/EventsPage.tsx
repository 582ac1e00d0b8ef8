import { type FormEvent, useCallback, useState } from 'react';
import { api } from '../api.js';
import { DetailDialog } from '../DetailDialog.js';
import { useDetailDialog } from '../use-detail-dialog.js';
import { usePolling } from '../use-polling.js';
import { DeadLetters } from './DeadLetters';
import type { DebuggerEvent, StoredEventView } from '../types.js';

const POLL_MS = 2_000;

const formatTime = (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 23)} UTC`;
const identityOf = (e: { email: string | null; domain: string | null }) => [e.email, e.domain].filter(Boolean).join(' · ') || '—';

function SyncBadge({ sync }: { sync: StoredEventView['sync'] }) {
  return (
    <span className={`sync sync-${sync.state}`} title={sync.reason}>
      {sync.state}
      {sync.reason ? `: ${sync.reason}` : ''}
    </span>
  );
}

export function EventsPage() {
  const [filter, setFilter] = useState({ name: '', identity: '' });
  const [events, setEvents] = useState<DebuggerEvent[] | null>(null);
  const [limit, setLimit] = useState(100);
  const [error, setError] = useState('');
  const [paused, setPaused] = useState(false);
  const [updatedAt, setUpdatedAt] = useState('');
  const details = useDetailDialog((eventId: string): Promise<StoredEventView> => api.event(eventId));
  const { detail, open } = details;

  const load = useCallback(async () => {
    try {
      const r = await api.events(filter);
      setEvents(r.events);
      setLimit(r.limit);
      setError('');
      setUpdatedAt(new Date().toISOString().slice(11, 19));
    } catch (err) {
      setError((err as Error).message);
    }
  }, [filter]);

  usePolling(load, POLL_MS, paused);

  const applyFilter = (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const data = new FormData(e.currentTarget);
    setEvents(null);
    setFilter({ name: String(data.get('name') ?? ''), identity: String(data.get('identity') ?? '') });
  };

  const filtered = filter.name.trim() !== '' || filter.identity.trim() !== '';

  return (
    <section aria-labelledby="events-title">
      <h1 id="events-title">Event debugger</h1>
      <p className="hint">
        The latest {limit} stored events of the last 7 days, newest first, refreshed every 2 seconds. Events appear once the pipeline has stored them, normally
        within seconds of the 202.
      </p>
      <form className="inline filters" onSubmit={applyFilter} role="search" aria-label="Filter events">
        <label htmlFor="filter-name">Event name</label>
        <input id="filter-name" name="name" maxLength={200} placeholder="contains…" defaultValue={filter.name} />
        <label htmlFor="filter-identity">Email or domain</label>
        <input id="filter-identity" name="identity" maxLength={320} placeholder="contains…" defaultValue={filter.identity} />
        <button type="submit">Filter</button>
        <button type="button" className="secondary" onClick={() => setPaused((p) => !p)} aria-pressed={paused}>
          {paused ? 'Resume live updates' : 'Pause live updates'}
        </button>
      </form>
      <p className="hint" role="status">
        {paused ? 'Paused.' : updatedAt ? `Live · updated ${updatedAt} UTC` : 'Loading…'}
        {events ? ` · ${events.length} event${events.length === 1 ? '' : 's'}${filtered ? ' matching the filter' : ''}` : ''}
      </p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {events === null ? null : events.length === 0 ? (
        <p>{filtered ? 'No stored events match the filter.' : 'No events stored in the last 7 days. Send one with an API key: it shows up here.'}</p>
      ) : (
        <div className="table-wrap">
          <table className="events">
            <caption className="sr-only">Latest events, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Event</th>
                <th scope="col">Identity</th>
                <th scope="col">Timestamp</th>
                <th scope="col">Dedupe</th>
                <th scope="col">CRM sync</th>
                <th scope="col">
                  <span className="sr-only">Details</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {events.map((e) => (
                <tr key={e.eventId}>
                  <td>{e.eventName}</td>
                  <td>{identityOf(e)}</td>
                  <td>
                    <time dateTime={e.timestamp}>{formatTime(e.timestamp)}</time>
                  </td>
                  <td title="The dedupe step lets one copy of each eventId through; redelivered copies still in the table are merged when read.">
                    stored once{e.copies > 1 ? ` (${e.copies - 1} redelivered cop${e.copies === 2 ? 'y' : 'ies'} merged)` : ''}
                  </td>
                  <td>
                    <SyncBadge sync={e.sync} />
                  </td>
                  <td>
                    <button type="button" className="secondary" onClick={() => void open(e.eventId)} aria-label={`Details of ${e.eventName} ${e.eventId}`}>
                      Details
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <DetailDialog state={details} titleId="event-detail-title" title={detail ? `${detail.eventName} · ${detail.eventId}` : 'Event'}>
        {detail && (
          <>
            <dl className="figures">
              <div>
                <dt>CRM sync</dt>
                <dd>
                  <SyncBadge sync={detail.sync} />
                  {detail.sync.updatedAt ? ` (${formatTime(detail.sync.updatedAt)})` : ''}
                </dd>
              </div>
              <div>
                <dt>Received</dt>
                <dd>{formatTime(detail.receivedAt)}</dd>
              </div>
              <div>
                <dt>Source</dt>
                <dd>
                  {detail.source}
                  {detail.jobId ? ` (job ${detail.jobId})` : ''}
                </dd>
              </div>
            </dl>
            <pre className="json" tabIndex={0} aria-label="The stored event">
              {JSON.stringify(detail, null, 2)}
            </pre>
          </>
        )}
      </DetailDialog>
      <DeadLetters paused={paused} />
    </section>
  );
}
