import { useCallback, useEffect, useRef, useState } from 'react';
import { api } from '../api.js';
import { DetailDialog } from '../DetailDialog.js';
import { useDetailDialog } from '../use-detail-dialog.js';
import { usePolling } from '../use-polling.js';
import type { DeadLetterDetail, DeadLetterView } from '../types.js';

/**
 * The server serves an account's list from a cache of 10 s (dead-letter.reader.ts): polling
 * faster would show nothing newer, and each refresh past it scans the dead-letter topics.
 */
const POLL_MS = 10_000;
const TOPIC_LABEL = { events: 'processing', crm: 'CRM sync' } as const;
const labelOf = (d: DeadLetterView) => `${d.eventName ?? 'event'} ${d.eventId ?? d.position}`;
/** The gateway refused it (a Segment message): it never became an event, so it is sent again, not replayed. */
const refusedAtIntake = (d: DeadLetterView) => d.consumer === 'gateway';

/**
 * The account's refused messages and dead letters, newest first, followed live (every 10 s
 * unless `paused`), each with its stored fields and, for the pipeline's, a replay after a
 * confirmation.
 */
export function DeadLetters({ paused = false }: { paused?: boolean }) {
  const [letters, setLetters] = useState<DeadLetterView[] | null>(null);
  const [truncated, setTruncated] = useState(false);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState('');
  const [message, setMessage] = useState('');
  const [replaying, setReplaying] = useState<DeadLetterView | null>(null);
  const dialog = useRef<HTMLDialogElement>(null);
  const details = useDetailDialog((letter: DeadLetterView): Promise<DeadLetterDetail> => api.deadLetter(letter));
  const { detail, open } = details;

  const load = useCallback(async (refresh = false) => {
    if (refresh) setLoading(true);
    try {
      const r = await api.deadLetters(refresh);
      setLetters(r.entries);
      setTruncated(r.truncated);
      setError('');
    } catch (err) {
      setError((err as Error).message);
    } finally {
      if (refresh) setLoading(false);
    }
  }, []);
  usePolling(load, POLL_MS, paused);

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
      <h2 id="dead-letters-title">Refused messages and dead letters</h2>
      <p className="hint">
        The latest 100 per stage, newest first, read again every 10 seconds: messages the gateway refused (intake: a Segment message with its route; the SDKs do
        not read per-message errors, so this is where they show), events the pipeline could not process (processing) and events the CRM refused for good (CRM
        sync). Replay a processing or CRM letter once the cause is fixed: it is sent again unchanged; a second copy of an event is deduplicated. A refused
        message is fixed and sent again by its sender.
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
            <caption className="sr-only">Refused messages and dead letters of this account, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Failed</th>
                <th scope="col">Stage</th>
                <th scope="col">Event</th>
                <th scope="col">Reason</th>
                <th scope="col">
                  <span className="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {letters.map((d) => (
                <tr key={`${d.topic}-${d.position}`}>
                  <td>{d.failedAt ? `${d.failedAt.slice(0, 10)} ${d.failedAt.slice(11, 19)} UTC` : '—'}</td>
                  <td>
                    {refusedAtIntake(d) ? 'intake' : TOPIC_LABEL[d.topic]}
                    {d.route && (
                      <>
                        <br />
                        <small>
                          <code>POST {d.route}</code>
                        </small>
                      </>
                    )}
                  </td>
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
                    <button type="button" className="secondary" onClick={() => void open(d)} aria-label={`Stored fields of ${labelOf(d)}`}>
                      Details
                    </button>{' '}
                    {!refusedAtIntake(d) && (
                      <button type="button" className="secondary" onClick={() => setReplaying(d)} aria-label={`Replay ${labelOf(d)}`}>
                        Replay
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {truncated && <p className="hint">Only the latest 100 per stage are shown.</p>}
      <DetailDialog state={details} titleId="letter-detail-title" title={detail ? labelOf(detail.letter) : 'Dead letter'}>
        {detail && (
          <>
            <p>
              <code>{detail.letter.code}</code> {detail.letter.reason}
            </p>
            {detail.valueShown ? (
              <pre className="json" tabIndex={0} aria-label="The stored message">
                {detail.valueText ?? JSON.stringify(detail.value, null, 2)}
              </pre>
            ) : (
              <p>
                The stored message is {detail.letter.valueBytes} bytes, too large to show here; your operator can print it (
                <code>ingest deadletters list --show-values</code>).
              </p>
            )}
          </>
        )}
      </DetailDialog>
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
