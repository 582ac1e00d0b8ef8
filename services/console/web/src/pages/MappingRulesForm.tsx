import { EVENT_FIELDS, type FormAction, type FormRule, newAction, newRule, OPS, readForm, removeRule, SOURCES, writeForm } from '../mapping-form.model.js';
import type { CrmPropertyList } from '../types.js';

/**
 * The mapping as a form of rules (when this event → this object → these fields, each with its
 * operation), for owners who do not write JSON. It edits the same text as the JSON view: every
 * change is written back as JSON, and JSON edits show here. Field names are offered from the
 * CRM's own properties (read through the connection the document names) when they can be read.
 */
export function MappingRulesForm({
  text,
  onChange,
  properties,
}: {
  text: string;
  onChange: (text: string) => void;
  properties: Partial<Record<string, CrmPropertyList>>;
}) {
  const form = readForm(text);
  if (!form.ok) return <p className="hint">{form.reason}</p>;
  const { doc, rules } = form;
  const write = (next: FormRule[]) => onChange(writeForm(doc, next));
  const setRule = (i: number, patch: Partial<FormRule>) => write(rules.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const setAction = (i: number, k: number, patch: Partial<FormAction>) =>
    setRule(i, { actions: (rules[i]?.actions ?? []).map((a, j) => (j === k ? { ...a, ...patch } : a)) });

  return (
    <div className="rules-form">
      {(['contact', 'company'] as const).map((object) => (
        <datalist key={object} id={`crm-fields-${object}`}>
          {(properties[object]?.properties ?? [])
            .filter((p) => !p.readOnly)
            .map((p) => (
              <option key={p.name} value={p.name}>
                {p.label} ({p.type})
              </option>
            ))}
        </datalist>
      ))}
      {rules.map((rule, i) => {
        const n = i + 1;
        return (
          <fieldset key={i} className="rule">
            <legend>Rule {n}</legend>
            <div className="rule-head">
              <label>
                Rule id
                <input value={rule.id} aria-label={`Rule ${n} id`} onChange={(e) => setRule(i, { id: e.target.value })} />
              </label>
              <label>
                When event
                <input
                  value={rule.eventName}
                  aria-label={`Rule ${n} event name`}
                  placeholder="Signed Up (comma-separated for several)"
                  onChange={(e) => setRule(i, { eventName: e.target.value })}
                />
              </label>
              <label>
                Object
                <select value={rule.object} aria-label={`Rule ${n} object`} onChange={(e) => setRule(i, { object: e.target.value })}>
                  <option value="contact">contact (by email)</option>
                  <option value="company">company (by domain)</option>
                </select>
              </label>
            </div>
            <table className="actions-table">
              <caption className="sr-only">Fields rule {n} changes</caption>
              <thead>
                <tr>
                  <th scope="col">Field</th>
                  <th scope="col">Operation</th>
                  <th scope="col">Source</th>
                  <th scope="col">Value</th>
                  <th scope="col">
                    <span className="sr-only">Remove</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {rule.actions.map((action, k) => {
                  const at = `Rule ${n} field ${k + 1}`;
                  return (
                    <tr key={k}>
                      <td>
                        <input
                          value={action.field}
                          list={`crm-fields-${rule.object}`}
                          aria-label={`${at} name`}
                          onChange={(e) => setAction(i, k, { field: e.target.value })}
                        />
                      </td>
                      <td>
                        <select value={action.op} aria-label={`${at} operation`} onChange={(e) => setAction(i, k, { op: e.target.value })}>
                          {OPS.map((op) => (
                            <option key={op}>{op}</option>
                          ))}
                        </select>
                      </td>
                      <td>
                        {action.op === 'increment' ? (
                          'add'
                        ) : (
                          <select
                            value={action.source}
                            aria-label={`${at} source`}
                            onChange={(e) => setAction(i, k, { source: e.target.value as FormAction['source'], value: '' })}
                          >
                            {SOURCES.map((s) => (
                              <option key={s}>{s}</option>
                            ))}
                          </select>
                        )}
                      </td>
                      <td>
                        {action.op !== 'increment' && action.source === 'event' ? (
                          <select value={action.value} aria-label={`${at} value`} onChange={(e) => setAction(i, k, { value: e.target.value })}>
                            <option value="">choose…</option>
                            {EVENT_FIELDS.map((f) => (
                              <option key={f}>{f}</option>
                            ))}
                          </select>
                        ) : (
                          <input
                            value={action.value}
                            aria-label={`${at} value`}
                            placeholder={action.op === 'increment' ? '1' : action.source === 'property' ? 'property key' : ''}
                            onChange={(e) => setAction(i, k, { value: e.target.value })}
                          />
                        )}
                      </td>
                      <td>
                        <button
                          type="button"
                          className="secondary"
                          aria-label={`Remove ${at.toLowerCase()}`}
                          disabled={rule.actions.length === 1}
                          onClick={() => setRule(i, { actions: rule.actions.filter((_, j) => j !== k) })}
                        >
                          Remove
                        </button>
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
            <div className="actions">
              <button type="button" className="secondary" onClick={() => setRule(i, { actions: [...rule.actions, newAction()] })}>
                Add field to rule {n}
              </button>
              <button type="button" className="secondary" disabled={rules.length === 1} onClick={() => onChange(removeRule(doc, rules, i))}>
                Remove rule {n}
              </button>
            </div>
          </fieldset>
        );
      })}
      <button type="button" className="secondary" onClick={() => write([...rules, newRule(rules.length + 1)])}>
        Add rule
      </button>
    </div>
  );
}
