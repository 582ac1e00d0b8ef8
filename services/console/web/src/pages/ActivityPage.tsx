import { useCallback, useEffect, useState } from 'react';
import { api } from '../api.js';
import { formatDate } from '../format.js';
import type { AuditPage } from '../types.js';

type AuditRecord = AuditPage['records'][number];

/** What this account's owners changed (the audit log), newest first, 50 at a time. */
export function ActivityPage() {
  const [records, setRecords] = useState<AuditRecord[] | null>(null);
  const [next, setNext] = useState<string | null>(null);
  const [error, setError] = useState('');

  const load = useCallback(async (cursor?: string) => {
    try {
      const page = await api.audit(cursor);
      setRecords((shown) => [...(cursor ? (shown ?? []) : []), ...page.records]);
      setNext(page.nextCursor);
      setError('');
    } catch (err) {
      setError((err as Error).message);
    }
  }, []);

  useEffect(() => {
    void load();
  }, [load]);

  return (
    <section aria-labelledby="activity-title">
      <h1 id="activity-title">Activity</h1>
      <p>Changes made by this account&apos;s owners: keys, CRM mapping, dead-letter replays. Newest first.</p>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {records === null ? (
        <p>Loading…</p>
      ) : records.length === 0 ? (
        <p>Nothing changed yet.</p>
      ) : (
        <table className="activity">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">What</th>
              <th scope="col">On</th>
              <th scope="col">From</th>
            </tr>
          </thead>
          <tbody>
            {records.map((r) => (
              <tr key={r.id}>
                <td>{formatDate(r.at)}</td>
                <td>{r.actor.name}</td>
                <td>
                  <code>{r.action}</code>
                </td>
                <td>{r.target ?? ''}</td>
                <td>{r.ip}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {next && (
        <button type="button" onClick={() => void load(next)}>
          Show older
        </button>
      )}
    </section>
  );
}
