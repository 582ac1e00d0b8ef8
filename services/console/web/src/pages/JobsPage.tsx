import { useCallback, useEffect, useState } from 'react';
import { api } from '../api.js';
import { formatDate, formatNumber } from '../format.js';
import type { JobView } from '../types.js';
import { CsvUpload } from './CsvUpload';

const POLL_MS = 1_500;
const running = (j: JobView) => j.status === 'queued' || j.status === 'processing';

export function JobsPage() {
  const [jobs, setJobs] = useState<JobView[] | null>(null);
  const [error, setError] = useState('');

  const load = useCallback(async () => {
    try {
      setJobs((await api.jobs()).jobs);
      setError('');
    } catch (err) {
      setError((err as Error).message);
    }
  }, []);

  useEffect(() => {
    void load();
  }, [load]);

  // Live progress: poll while a job is queued or processing, stop when all are done.
  const anyRunning = jobs?.some(running) ?? false;
  useEffect(() => {
    if (!anyRunning) return;
    const timer = window.setInterval(() => void load(), POLL_MS);
    return () => window.clearInterval(timer);
  }, [anyRunning, load]);

  return (
    <section aria-labelledby="jobs-title">
      <h1 id="jobs-title">Jobs</h1>
      <CsvUpload onStarted={() => void load()} />
      <h2>Bulk and CSV jobs</h2>
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {jobs === null ? (
        <p>Loading…</p>
      ) : jobs.length === 0 ? (
        <p>No jobs yet. Upload a CSV above or send POST /v1/events/bulk.</p>
      ) : (
        <ul className="jobs" aria-live="polite">
          {jobs.map((job) => (
            <JobItem key={job.jobId} job={job} />
          ))}
        </ul>
      )}
    </section>
  );
}

function JobItem({ job }: { job: JobView }) {
  const percent = job.totalEvents > 0 ? Math.round((job.processed / job.totalEvents) * 100) : 100;
  return (
    <li className="job" data-testid="job" data-status={job.status}>
      <div className="job-head">
        <strong>{job.source.toUpperCase()}</strong> <code title={job.jobId}>{job.jobId.slice(0, 13)}…</code>
        <span className={`status ${job.status}`}>{job.status}</span>
        <span className="hint">{formatDate(job.createdAt)}</span>
      </div>
      <div className="meter" role="progressbar" aria-label={`Progress of job ${job.jobId}`} aria-valuemin={0} aria-valuemax={100} aria-valuenow={percent}>
        <div className={job.status === 'failed' ? 'fill danger' : 'fill'} style={{ width: `${percent}%` }} />
      </div>
      <p className="counts">
        {formatNumber(job.processed)} of {formatNumber(job.totalEvents)} processed · {formatNumber(job.accepted)} accepted · {formatNumber(job.rejected)}{' '}
        rejected · {formatNumber(job.duplicates)} duplicates
      </p>
      {job.failureReason && <p className="error">{job.failureReason}</p>}
      {job.errors.length > 0 && (
        <details>
          <summary>
            {job.errorsTruncated
              ? `First ${job.errors.length} of ${job.errorsTotal ?? 'more'} errors`
              : `${job.errors.length} error${job.errors.length === 1 ? '' : 's'}`}
          </summary>
          <div className="table-wrap">
            <table>
              <thead>
                <tr>
                  <th scope="col">{job.source === 'csv' ? 'Row' : 'Index'}</th>
                  <th scope="col">{job.source === 'csv' ? 'Column' : 'Field'}</th>
                  <th scope="col">Code</th>
                  <th scope="col">Message</th>
                </tr>
              </thead>
              <tbody>
                {job.errors.map((e, i) => (
                  <tr key={i}>
                    <td>{e.row ?? e.index}</td>
                    <td>{e.column ?? e.field ?? ''}</td>
                    <td>
                      <code>{e.code}</code>
                    </td>
                    <td>{e.message}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
        </details>
      )}
    </li>
  );
}
