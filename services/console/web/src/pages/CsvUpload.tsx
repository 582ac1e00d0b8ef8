import Papa from 'papaparse';
import { type ChangeEvent, type FormEvent, useState } from 'react';
import { api, ApiError } from '../api.js';
import { csvHeaderProblems } from '../csv-header-check.js';

const PREVIEW_ROWS = 5;
const MAX_BYTES = 50 * 1000 * 1000;
/** Of a gzip-compressed file, only this much is inflated for the preview (the server inflates the rest). */
const GZIP_PREVIEW_BYTES = 256 * 1024;

interface Preview {
  file: File;
  header: string[];
  rows: string[][];
  problems: string[];
}

/** Picks a CSV, previews its first rows, checks its header, then starts the job. */
export function CsvUpload({ onStarted }: { onStarted: () => void }) {
  const [preview, setPreview] = useState<Preview | null>(null);
  const [message, setMessage] = useState('');
  const [serverErrors, setServerErrors] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [timezone, setTimezone] = useState('');

  const choose = (e: ChangeEvent<HTMLInputElement>) => {
    const file = e.target.files?.[0];
    setMessage('');
    setServerErrors([]);
    setPreview(null);
    if (!file) return;
    if (file.size > MAX_BYTES) {
      setPreview({ file, header: [], rows: [], problems: ['The file is larger than 50 MB.'] });
      return;
    }
    const fail = (err: Error) => setPreview({ file, header: [], rows: [], problems: [`The file could not be read: ${err.message}`] });
    const show = (result: Papa.ParseResult<string[]>) => {
      const [header = [], ...rows] = result.data;
      if (header[0]) header[0] = header[0].replace(/^\uFEFF/, '');
      setPreview({ file, header, rows, problems: header.length === 0 ? ['The file is empty.'] : csvHeaderProblems(header) });
    };
    // Only the first rows are read: a 50 MB file is not loaded into the page.
    // delimitersToGuess: the delimiters the server detects; anything else would preview a file it refuses.
    const options = { preview: PREVIEW_ROWS + 1, delimitersToGuess: [',', ';', '\t'], skipEmptyLines: 'greedy' as const };
    if (/\.gz$/i.test(file.name)) {
      gunzipHead(file, GZIP_PREVIEW_BYTES).then((text) => show(Papa.parse<string[]>(text, options)), fail);
      return;
    }
    Papa.parse<string[]>(file, { ...options, complete: show, error: fail });
  };

  const start = async (e: FormEvent<HTMLFormElement>) => {
    e.preventDefault();
    const form = e.currentTarget;
    if (!preview || preview.problems.length > 0) return;
    setBusy(true);
    try {
      const receipt = await api.uploadCsv(preview.file, timezone);
      setMessage(`Job ${receipt.jobId} queued with ${receipt.totalEvents} rows.`);
      setPreview(null);
      form.reset();
      onStarted();
    } catch (err) {
      setMessage(err instanceof Error ? err.message : 'The upload failed.');
      setServerErrors(err instanceof ApiError ? err.errors.map((x) => x.message) : []);
    } finally {
      setBusy(false);
    }
  };

  return (
    <form className="upload" onSubmit={start} aria-labelledby="upload-title">
      <h2 id="upload-title">Upload a CSV</h2>
      <p className="hint" id="csv-help">
        Columns: event_name, timestamp, email and/or domain (case, spaces and underscores do not matter: “Event Name” is event_name); other columns become
        properties. Comma, semicolon or tab separated. Timestamps: ISO 8601 with a zone, or epoch seconds or milliseconds. At most 10,000 rows and 50 MB
        (uncompressed); a gzip-compressed .csv.gz is fine.
      </p>
      <label htmlFor="csv-file">CSV file</label>{' '}
      <input
        id="csv-file"
        name="file"
        type="file"
        accept=".csv,.tsv,.csv.gz,.tsv.gz,text/csv,text/tab-separated-values,application/gzip"
        onChange={choose}
        aria-describedby="csv-help"
      />
      <p>
        <label htmlFor="csv-timezone">Time zone of times without one</label>{' '}
        <input
          id="csv-timezone"
          name="timezone"
          type="text"
          placeholder={Intl.DateTimeFormat().resolvedOptions().timeZone}
          value={timezone}
          onChange={(e) => setTimezone(e.target.value)}
          aria-describedby="csv-timezone-help"
        />{' '}
        <span className="hint" id="csv-timezone-help">
          Only for times such as 2026-01-01 00:00:00 (no Z or offset), e.g. Europe/Berlin or UTC; without it such rows are rejected.
        </span>
      </p>
      {preview && preview.problems.length > 0 && (
        <ul className="error" role="alert" aria-label="Problems in the file">
          {preview.problems.map((p) => (
            <li key={p}>{p}</li>
          ))}
        </ul>
      )}
      {preview && preview.header.length > 0 && (
        <div className="table-wrap">
          <table className="preview">
            <caption>First rows of {preview.file.name}</caption>
            <thead>
              <tr>
                {preview.header.map((h, i) => (
                  <th key={i} scope="col">
                    {h}
                  </th>
                ))}
              </tr>
            </thead>
            <tbody>
              {preview.rows.map((row, r) => (
                <tr key={r}>
                  {preview.header.map((_, c) => (
                    <td key={c}>{row[c] ?? ''}</td>
                  ))}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <p>
        <button type="submit" disabled={!preview || preview.problems.length > 0 || busy}>
          {busy ? 'Uploading…' : 'Start job'}
        </button>
      </p>
      {message && (
        <div role="status" className={serverErrors.length > 0 ? 'error' : 'notice'}>
          <p>{message}</p>
          {serverErrors.length > 0 && (
            <ul>
              {serverErrors.map((m, i) => (
                <li key={i}>{m}</li>
              ))}
            </ul>
          )}
        </div>
      )}
    </form>
  );
}

/** The first `maxBytes` of a gzip file, inflated by the browser (the rows the preview needs). */
async function gunzipHead(file: File, maxBytes: number): Promise<string> {
  const reader = file.stream().pipeThrough(new DecompressionStream('gzip')).getReader();
  const decoder = new TextDecoder();
  let text = '';
  let size = 0;
  try {
    while (size < maxBytes) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  // A row cut at maxBytes is not shown: only whole lines are previewed.
  return size >= maxBytes ? text.slice(0, text.lastIndexOf('\n') + 1) : text;
}
