import { type FormEvent, type RefObject, useCallback, useEffect, useMemo, useRef, useState } from 'react';
import { ApiError, api } from '../api.js';
import { formatDate } from '../format.js';
import { locatePointer } from '../json-locate.js';
import { lineDiff } from '../line-diff.js';
import type { CrmPropertyList, DryRunView, MappingVersionView, StoredMappingView } from '../types.js';
import { MappingRulesForm } from './MappingRulesForm.js';

const STARTER = {
  version: 1,
  crm: { type: 'hubspot', credentialsRef: 'hubspot-prod' },
  rules: [
    {
      id: 'signed-up',
      when: { eventName: 'Signed Up' },
      object: 'contact',
      actions: [
        { op: 'setOnce', field: 'first_source', from: { property: 'source' } },
        { op: 'increment', field: 'signups' },
      ],
    },
  ],
};

const SAMPLE_EVENT = { eventName: 'Signed Up', email: 'ada@example.com', properties: { source: 'ads', plan: 'pro' } };

const pretty = (value: unknown) => JSON.stringify(value, null, 2);

/** A server message with its JSON Pointer, and the text area the pointer is about. */
interface FieldMessage {
  field: string;
  message: string;
  target: 'mapping' | 'event' | null;
  pointer: string;
}

function toMessages(err: unknown, prefixes: { mapping?: string; event?: string }): FieldMessage[] {
  if (!(err instanceof ApiError)) return [];
  return err.errors.map((e) => {
    const field = e.field ?? '/';
    for (const target of ['mapping', 'event'] as const) {
      const prefix = prefixes[target];
      if (prefix === undefined) continue;
      if (prefix === '') return { field, message: e.message, target, pointer: field };
      if (field === prefix || field.startsWith(`${prefix}/`)) return { field, message: e.message, target, pointer: field.slice(prefix.length) || '/' };
    }
    return { field, message: e.message, target: null, pointer: field };
  });
}

/** Select the value a pointer names in a text area and scroll it into view. */
function jumpTo(textarea: HTMLTextAreaElement | null, pointer: string) {
  if (!textarea) return;
  const span = locatePointer(textarea.value, pointer);
  textarea.focus();
  if (!span) return;
  textarea.setSelectionRange(span.start, span.end);
  const line = textarea.value.slice(0, span.start).split('\n').length - 1;
  const lineHeight = parseFloat(getComputedStyle(textarea).lineHeight) || 18;
  textarea.scrollTop = Math.max(0, (line - 3) * lineHeight);
}

function parseJson(text: string, what: string): { ok: true; value: unknown } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, message: `The ${what} is not valid JSON: ${(err as Error).message}` };
  }
}

/** Why a save could not be checked against the CRM (the owner may then save without checking), or undefined. */
function uncheckable(err: unknown): boolean {
  if (!(err instanceof ApiError)) return false;
  if ([429, 502, 503].includes(err.status)) return true;
  return err.status === 400 && err.errors.some((e) => e.code === 'unknown_credential' || e.code === 'credential_mismatch');
}

/** The CRM's fields for the connection the document names, to offer in the form; read again when the name changes. */
function useCrmProperties(text: string): { lists: Partial<Record<string, CrmPropertyList>>; note: string } {
  const [lists, setLists] = useState<Partial<Record<string, CrmPropertyList>>>({});
  const [note, setNote] = useState('');
  let ref = '';
  let type = '';
  try {
    const doc = JSON.parse(text) as { crm?: { type?: unknown; credentialsRef?: unknown } };
    ref = typeof doc.crm?.credentialsRef === 'string' ? doc.crm.credentialsRef : '';
    type = typeof doc.crm?.type === 'string' ? doc.crm.type : '';
  } catch {
    // The JSON view says what is wrong; keep the lists read last.
  }
  useEffect(() => {
    if (ref === '' || type === '' || type === 'webhook') {
      setLists({});
      setNote('');
      return;
    }
    let live = true;
    void Promise.all([api.connectionProperties(ref, 'contact'), api.connectionProperties(ref, 'company')]).then(
      ([contact, company]) => {
        if (!live) return;
        setLists({ contact, company });
        setNote('');
      },
      (err: unknown) => {
        if (!live) return;
        setLists({});
        setNote(`Field names of ${ref} cannot be offered: ${(err as Error).message}`);
      },
    );
    return () => {
      live = false;
    };
  }, [ref, type]);
  return { lists, note };
}

export function MappingsPage() {
  const [current, setCurrent] = useState<StoredMappingView | null | undefined>(undefined);
  const [editedVersion, setEditedVersion] = useState<number | null>(null);
  const [text, setText] = useState('');
  const [versions, setVersions] = useState<MappingVersionView[]>([]);
  const [errors, setErrors] = useState<FieldMessage[]>([]);
  const [problem, setProblem] = useState('');
  const [conflict, setConflict] = useState<number | null | undefined>(undefined);
  const [saved, setSaved] = useState('');
  const [saving, setSaving] = useState(false);
  const [confirmDelete, setConfirmDelete] = useState(false);
  const [canSkipCheck, setCanSkipCheck] = useState(false);
  const editor = useRef<HTMLTextAreaElement>(null);
  const crmFields = useCrmProperties(text);

  const load = useCallback(async (replaceText: boolean) => {
    try {
      const [{ current: cur }, { versions: list }] = await Promise.all([api.mapping(), api.mappingVersions()]);
      setCurrent(cur);
      setVersions(list);
      if (replaceText) {
        setText(pretty(cur ? cur.mapping : STARTER));
        // After a deletion the next save follows the deleting version (If-Match on it).
        setEditedVersion(cur ? cur.version : (list[0]?.version ?? null));
        setErrors([]);
        setConflict(undefined);
      }
    } catch (err) {
      setProblem((err as Error).message);
    }
  }, []);
  useEffect(() => {
    void load(true);
  }, [load]);

  const save = async (e: FormEvent | null, unchecked = false) => {
    e?.preventDefault();
    setCanSkipCheck(false);
    setSaved('');
    setProblem('');
    setConflict(undefined);
    const parsed = parseJson(text, 'mapping document');
    if (!parsed.ok) {
      setErrors([]);
      setProblem(parsed.message);
      return;
    }
    setSaving(true);
    try {
      const stored = await api.saveMapping(parsed.value, editedVersion, unchecked);
      setErrors([]);
      setEditedVersion(stored.version);
      setSaved(`Saved as version ${stored.version}.${unchecked ? ' Its fields were not checked against the CRM.' : ''}`);
      await load(false);
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) {
        const currentVersion = err.extensions.currentVersion;
        setConflict(typeof currentVersion === 'number' ? currentVersion : null);
        setErrors([]);
        // The history shows the version that won; the editor keeps the owner's text.
        await load(false);
      } else {
        setErrors(toMessages(err, { mapping: '' }));
        setProblem((err as Error).message);
        setCanSkipCheck(uncheckable(err));
      }
    } finally {
      setSaving(false);
    }
  };

  const remove = async () => {
    if (!current) return;
    setConfirmDelete(false);
    setSaved('');
    setProblem('');
    try {
      const deleted = await api.deleteMapping(current.version);
      setSaved(`Deleted in version ${deleted.version}: the CRM sink syncs nothing until a mapping is saved again.`);
      await load(true);
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) {
        setConflict(typeof err.extensions.currentVersion === 'number' ? err.extensions.currentVersion : null);
        await load(false);
      } else {
        setProblem((err as Error).message);
      }
    }
  };

  if (current === undefined) return problem ? <p className="error">{problem}</p> : <p>Loading…</p>;
  const deletedIn = current === null && versions[0]?.deleted ? versions[0].version : undefined;

  return (
    <section aria-labelledby="mapping-title">
      <h1 id="mapping-title">CRM mapping</h1>
      <p className="hint">
        {deletedIn !== undefined
          ? `The mapping was deleted in version ${deletedIn}: the CRM sink syncs nothing. The editor holds a starting point; saving stores version ${deletedIn + 1} and turns sync on again.`
          : editedVersion === null
            ? 'No mapping stored yet: the editor holds a starting point. Saving stores version 1.'
            : `Editing version ${editedVersion}.`}{' '}
        The CRM sink applies the newest version to every deduplicated event.
      </p>
      <form className="mapping-grid" onSubmit={save} noValidate>
        <div className="editor">
          <h2 id="rules-form-title">Rules</h2>
          <p className="hint">
            Each rule: when this event arrives, change these fields of this CRM object. The JSON below follows every change, and the other way round.
          </p>
          {crmFields.note && <p className="hint">{crmFields.note}</p>}
          <MappingRulesForm
            text={text}
            properties={crmFields.lists}
            onChange={(next) => {
              setText(next);
              setSaved('');
            }}
          />
          <label htmlFor="mapping-editor">Mapping document (JSON)</label>
          <textarea
            id="mapping-editor"
            ref={editor}
            className="code"
            spellCheck={false}
            rows={22}
            value={text}
            aria-invalid={errors.length > 0 || problem !== ''}
            aria-describedby="mapping-messages"
            onChange={(e) => {
              setText(e.target.value);
              setSaved('');
            }}
          />
          <div className="actions">
            <button type="submit" disabled={saving}>
              {editedVersion === null ? 'Save version 1' : `Save as version ${editedVersion + 1}`}
            </button>
            <button type="button" className="secondary" onClick={() => void load(true)}>
              Discard changes
            </button>
            {canSkipCheck && (
              <button type="button" className="danger" disabled={saving} onClick={() => void save(null, true)}>
                Save without checking
              </button>
            )}
            {current && !confirmDelete && (
              <button type="button" className="danger" onClick={() => setConfirmDelete(true)}>
                Delete mapping…
              </button>
            )}
          </div>
          {current && confirmDelete && (
            <div className="banner danger" role="alert">
              <p>
                <strong>Delete the mapping?</strong> Version {current.version + 1} will turn CRM sync off from the next event on; the history keeps every
                version.
              </p>
              <button type="button" onClick={() => void remove()}>
                Delete mapping
              </button>{' '}
              <button type="button" className="secondary" onClick={() => setConfirmDelete(false)}>
                Keep it
              </button>
            </div>
          )}
          {saved && (
            <p className="ok" role="status">
              {saved}
            </p>
          )}
          {conflict !== undefined && (
            <div className="banner danger" role="alert">
              <p>
                <strong>Not saved: the mapping changed since you started editing.</strong>{' '}
                {conflict === null ? 'The mapping was removed.' : `Version ${conflict} is now current (you edited version ${editedVersion ?? '–'}).`} Copy your
                changes, load the current version and apply them again.
              </p>
              <button type="button" onClick={() => void load(true)}>
                Load version {conflict ?? ''}
              </button>
            </div>
          )}
        </div>
        <div id="mapping-messages" className="messages" aria-live="polite">
          <h2>Validation</h2>
          {problem && <p className="error">{problem}</p>}
          {errors.length > 0 ? (
            <ErrorList errors={errors} onJump={(m) => jumpTo(editor.current, m.pointer)} />
          ) : (
            !problem && <p className="hint">The server checks the document when you save or dry-run a draft; its messages appear here.</p>
          )}
        </div>
      </form>
      <History versions={versions} current={current} />
      <DryRunPanel draftText={text} onDraftErrors={setErrors} editor={editor} />
    </section>
  );
}

function ErrorList({ errors, onJump }: { errors: FieldMessage[]; onJump: (m: FieldMessage) => void }) {
  return (
    <ul className="field-errors" aria-label="Validation errors">
      {errors.map((m, i) => (
        <li key={`${m.field}-${i}`}>
          {m.target ? (
            <button type="button" className="link" onClick={() => onJump(m)} title="Select this place in the editor">
              <code>{m.field}</code> {m.message}
            </button>
          ) : (
            <span>
              <code>{m.field}</code> {m.message}
            </span>
          )}
        </li>
      ))}
    </ul>
  );
}

function History({ versions, current }: { versions: MappingVersionView[]; current: StoredMappingView | null }) {
  const [compared, setCompared] = useState<StoredMappingView | null>(null);
  const [error, setError] = useState('');

  const compare = async (version: number) => {
    setError('');
    try {
      setCompared(await api.mappingVersion(version));
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const diff = useMemo(() => (compared && current ? lineDiff(pretty(compared.mapping), pretty(current.mapping)) : []), [compared, current]);
  const changes = diff.filter((l) => l.kind !== 'same').length;

  return (
    <section aria-labelledby="history-title">
      <h2 id="history-title">Version history</h2>
      {versions.length === 0 ? (
        <p>No versions yet.</p>
      ) : (
        <div className="table-wrap">
          <table>
            <caption className="sr-only">Mapping versions, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Saved</th>
                <th scope="col">Author</th>
                <th scope="col">Diff</th>
              </tr>
            </thead>
            <tbody>
              {versions.map((v) => (
                <tr key={v.version}>
                  <td>
                    {v.version}
                    {v.version === current?.version && <span className="badge">current</span>}
                    {v.deleted && <span className="badge">deleted</span>}
                  </td>
                  <td>{formatDate(v.createdAt)}</td>
                  <td>{v.author}</td>
                  <td>
                    {v.deleted ? (
                      'sync off'
                    ) : (
                      <button
                        type="button"
                        className="secondary"
                        onClick={() => void compare(v.version)}
                        aria-label={`Compare version ${v.version} with the current one`}
                      >
                        Compare with current
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {error && <p className="error">{error}</p>}
      {compared && current && (
        <div className="diff-box">
          <h3>
            Version {compared.version} → version {current.version} (current):{' '}
            {changes === 0 ? 'identical' : `${changes} changed line${changes === 1 ? '' : 's'}`}
          </h3>
          <pre className="diff" aria-label={`Differences from version ${compared.version} to version ${current.version}`} tabIndex={0}>
            {diff.map((l, i) => (
              <span key={i} className={`diff-${l.kind}`}>
                {l.kind === 'added' ? '+ ' : l.kind === 'removed' ? '- ' : '  '}
                {l.text}
                {'\n'}
              </span>
            ))}
          </pre>
        </div>
      )}
    </section>
  );
}

function DryRunPanel({
  draftText,
  onDraftErrors,
  editor,
}: {
  draftText: string;
  onDraftErrors: (errors: FieldMessage[]) => void;
  editor: RefObject<HTMLTextAreaElement | null>;
}) {
  const [eventText, setEventText] = useState(pretty(SAMPLE_EVENT));
  const [useDraft, setUseDraft] = useState(true);
  const [result, setResult] = useState<DryRunView | null>(null);
  const [errors, setErrors] = useState<FieldMessage[]>([]);
  const [problem, setProblem] = useState('');
  const eventArea = useRef<HTMLTextAreaElement>(null);

  const run = async (e: FormEvent) => {
    e.preventDefault();
    setProblem('');
    setErrors([]);
    setResult(null);
    const event = parseJson(eventText, 'sample event');
    if (!event.ok) return setProblem(event.message);
    let draft: unknown;
    if (useDraft) {
      const parsed = parseJson(draftText, 'mapping document');
      if (!parsed.ok) return setProblem(parsed.message);
      draft = parsed.value;
    }
    try {
      setResult(await api.dryRun(event.value, draft));
      onDraftErrors([]);
    } catch (err) {
      const messages = toMessages(err, { mapping: '/mapping', event: '/event' });
      setErrors(messages.filter((m) => m.target !== 'mapping'));
      // Mapping errors belong next to the editor.
      onDraftErrors(messages.filter((m) => m.target === 'mapping'));
      setProblem((err as Error).message);
    }
  };

  const extra = result ? Object.entries(result).filter(([k]) => !['mappingVersion', 'operations', 'rules'].includes(k)) : [];

  return (
    <section aria-labelledby="dry-run-title">
      <h2 id="dry-run-title">Dry-run</h2>
      <p className="hint">Shows what the CRM sink would do with an event. Nothing is sent to the CRM or stored.</p>
      <form className="dry-run" onSubmit={run} noValidate>
        <label htmlFor="dry-run-event">Sample event (JSON, as POST /v1/events accepts it)</label>
        <textarea
          id="dry-run-event"
          ref={eventArea}
          className="code"
          spellCheck={false}
          rows={8}
          value={eventText}
          onChange={(e) => setEventText(e.target.value)}
        />
        <label className="check">
          <input type="checkbox" checked={useDraft} onChange={(e) => setUseDraft(e.target.checked)} /> Use the document in the editor (unsaved draft) instead of
          the current version
        </label>
        <div className="actions">
          <button type="submit">Dry-run</button>
        </div>
      </form>
      <div aria-live="polite">
        {problem && <p className="error">{problem}</p>}
        {errors.length > 0 && <ErrorList errors={errors} onJump={(m) => jumpTo(m.target === 'event' ? eventArea.current : editor.current, m.pointer)} />}
        {result && (
          <div className="dry-run-result" data-testid="dry-run-result">
            <h3>
              {result.operations.length} planned operation{result.operations.length === 1 ? '' : 's'} (
              {result.mappingVersion === null ? 'draft' : `version ${result.mappingVersion}`})
            </h3>
            {result.operations.length > 0 && (
              <pre className="json" tabIndex={0} aria-label="Planned operations">
                {pretty(result.operations)}
              </pre>
            )}
            <h3>Rules</h3>
            <div className="table-wrap">
              <table>
                <caption className="sr-only">Every rule and whether it matched</caption>
                <thead>
                  <tr>
                    <th scope="col">Rule</th>
                    <th scope="col">Outcome</th>
                  </tr>
                </thead>
                <tbody>
                  {result.rules.map((r) => (
                    <tr key={r.ruleId}>
                      <td>
                        <code>{r.ruleId}</code>
                      </td>
                      <td>{r.matched ? 'matched' : `not matched: ${RULE_REASONS[r.reason ?? ''] ?? r.reason ?? 'no reason given'}`}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
            {extra.map(([key, value]) => (
              <div key={key}>
                <h3>{key === 'calls' ? 'HTTP calls' : key}</h3>
                <pre className="json" tabIndex={0} aria-label={key}>
                  {pretty(value)}
                </pre>
              </div>
            ))}
          </div>
        )}
      </div>
    </section>
  );
}

const RULE_REASONS: Record<string, string> = {
  event_name: 'the event name is not listed',
  condition: 'a condition does not hold',
  missing_identity: 'the event lacks the identity (email or domain) of the object',
};
