import { useCallback, useEffect, useRef, useState } from 'react';
import { api } from '../api.js';
import type { DeadLetterView } from '../types.js';

const TOPIC_LABEL = { events: 'processing', crm: 'CRM sync' } as const;
const labelOf = (d: DeadLetterView) => `${d.eventName ?? 'event'} ${d.eventId ?? d.position}`;

/** The account's dead letters, with a replay (after a confirmation) for each. Read on demand: reading them scans the topics. */
export function DeadLetters() {
  const [letters, setLetters] = useState<DeadLetterView[] | null>(null);
  const [truncated, setTruncated] = useState(false);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState('');
  const [message, setMessage] = useState('');
  const [replaying, setReplaying] = useState<DeadLetterView | null>(null);
  const dialog = useRef<HTMLDialogElement>(null);

  const load = useCallback(async (refresh = false) => {
    setLoading(true);
    setError('');
    try {
      const r = await api.deadLetters(refresh);
      setLetters(r.entries);
      setTruncated(r.truncated);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setLoading(false);
    }
  }, []);
  useEffect(() => {
    void load();
  }, [load]);

  useEffect(() => {
    if (replaying) dialog.current?.showModal();
    else dialog.current?.close();
  }, [replaying]);

  const replay = async () => {
    if (!replaying) return;
    const letter = replaying;
    setReplaying(null);
    setMessage('');
    setError('');
    try {
      const r = await api.replayDeadLetter(letter);
      setMessage(`Replayed ${labelOf(letter)} to ${r.to}. If it fails again, it comes back here as a new dead letter.`);
    } catch (err) {
      setError((err as Error).message);
    }
  };

  return (
    <section aria-labelledby="dead-letters-title">
      <h2 id="dead-letters-title">Dead letters</h2>
      <p className="hint">
        Events of this account the pipeline could not process (processing) or the CRM refused for good (CRM sync), newest first. Replay one once the cause is
        fixed: it is sent again unchanged; a second copy of an event is deduplicated.
      </p>
      <div className="actions start">
        <button type="button" className="secondary" onClick={() => void load(true)} disabled={loading}>
          {loading ? 'Reading dead letters…' : 'Refresh dead letters'}
        </button>
      </div>
      {message && (
        <p className="ok" role="status">
          {message}
        </p>
      )}
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {letters === null ? (
        loading && <p>Loading…</p>
      ) : letters.length === 0 ? (
        <p>No dead letters.</p>
      ) : (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Dead letters of this account, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Failed</th>
                <th scope="col">Stage</th>
                <th scope="col">Event</th>
                <th scope="col">Reason</th>
                <th scope="col">
                  <span className="sr-only">Replay</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {letters.map((d) => (
                <tr key={`${d.topic}-${d.position}`}>
                  <td>{d.failedAt ? `${d.failedAt.slice(0, 10)} ${d.failedAt.slice(11, 19)} UTC` : '—'}</td>
                  <td>{TOPIC_LABEL[d.topic]}</td>
                  <td>
                    {d.eventName ?? '—'}
                    <br />
                    <small>
                      <code>{d.eventId ?? `position ${d.position}`}</code>
                    </small>
                  </td>
                  <td>
                    <code>{d.code}</code> {d.reason}
                    {d.replayedFrom && (
                      <>
                        <br />
                        <small>failed again after a replay</small>
                      </>
                    )}
                  </td>
                  <td>
                    <button type="button" className="secondary" onClick={() => setReplaying(d)} aria-label={`Replay ${labelOf(d)}`}>
                      Replay
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {truncated && <p className="hint">Only the first 100 dead letters per stage are shown.</p>}
      <dialog ref={dialog} aria-labelledby="replay-title" onClose={() => setReplaying(null)}>
        <h2 id="replay-title">Replay {replaying ? labelOf(replaying) : ''}?</h2>
        <p>
          It is sent again, unchanged, to {replaying?.topic === 'crm' ? 'the CRM sync' : 'the processing pipeline'}. Replaying it twice sends two copies; events
          are deduplicated by their id.
        </p>
        <div className="actions">
          <button type="button" className="secondary" onClick={() => setReplaying(null)} autoFocus>
            Cancel
          </button>
          <button type="button" onClick={() => void replay()}>
            Replay
          </button>
        </div>
      </dialog>
    </section>
  );
}
