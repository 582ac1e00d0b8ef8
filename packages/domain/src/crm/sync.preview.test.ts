import { describe, expect, it } from 'vitest';
import { ledgerKey, type PlannedOperation } from './mapping.plan.js';
import type { RecordState } from './record-state.js';
import type { RecordStateReader } from './record-state.reader.js';
import { requestPlanner } from './request-planner.js';
import { previewSync } from './sync.preview.js';

/** The reader over a plain map, as Redis would answer; the preview never writes, so nothing else is needed. */
function reader(states: Record<string, RecordState>, applied: string[] = [], done: string[] = []): RecordStateReader {
  const values = async (_a: string, object: string, key: string, fields: readonly string[]) =>
    Object.fromEntries(fields.filter((f) => states[`${object}:${key}`]?.[f] !== undefined).map((f) => [f, states[`${object}:${key}`]?.[f] as string]));
  return {
    values,
    present: async (a, o, k, f) => new Set(Object.keys(await values(a, o, k, f))),
    applied: async (keys) => new Set(keys.filter((k) => applied.includes(k))),
    activitiesDone: async (keys) => new Set(keys.filter((k) => done.includes(k))),
  };
}

const op: PlannedOperation = {
  ruleId: 'r',
  object: 'contact',
  key: { email: 'a@x.io' },
  set: { plan: 'pro' },
  setOnce: {},
  increment: { logins: 1 },
  max: {},
  min: {},
  append: {},
  activity: { type: 'login', title: 'Logged in', occurredAt: '2026-11-20T10:00:00.000Z' },
  skipped: [],
};
const webhook = requestPlanner({ type: 'webhook', url: 'http://h.test/in', secret: 's' }, () => new Date('2026-11-22T00:00:00.000Z'));

describe('previewSync', () => {
  it('continues from the state, reads nothing the sink holds, creates the activity', async () => {
    const preview = await previewSync({
      accountId: 'acc',
      timestampMs: 1_700_000_000_000,
      eventId: 'e1',
      crmType: 'webhook',
      operations: [op],
      planner: webhook,
      reader: reader({ 'contact:a@x.io': { 'n:logins': '6' } }),
    });
    expect(preview.calls.map((c) => (c.body as { type: string }).type)).toEqual(['records.upsert', 'activities.create']);
    expect(preview.calls[0]?.body).toMatchObject({ records: [{ key: 'a@x.io', properties: { plan: 'pro', logins: 7 } }] });
    expect(preview.notes.map((n) => n.code)).toEqual(['sent_at_is_send_time']);
  });

  it('applies nothing again for a set ledger key and creates no activity twice', async () => {
    const key = ledgerKey('acc', 'e1', 'r');
    const preview = await previewSync({
      accountId: 'acc',
      timestampMs: 1_700_000_000_000,
      eventId: 'e1',
      crmType: 'webhook',
      operations: [op],
      planner: webhook,
      reader: reader({ 'contact:a@x.io': { 'n:logins': '7' } }, [key], [key]),
    });
    expect(preview.calls).toHaveLength(1);
    expect(preview.calls[0]?.body).toMatchObject({ records: [{ properties: { logins: 7 } }] });
    expect(preview.notes.map((n) => n.code)).toEqual(['already_applied', 'activity_already_created', 'sent_at_is_send_time']);
  });

  it('shows the CRM read of fields the sink never held, and says what it assumes', async () => {
    const hubspot = requestPlanner({ type: 'hubspot', accessToken: 't' });
    const preview = await previewSync({
      accountId: 'acc',
      timestampMs: 1_700_000_000_000,
      eventId: 'e1',
      crmType: 'hubspot',
      operations: [{ ...op, activity: undefined }],
      planner: hubspot,
      reader: reader({}),
    });
    expect(preview.calls.map((c) => c.path)).toEqual(['/crm/v3/objects/contacts/batch/read', '/crm/v3/objects/contacts/batch/upsert']);
    expect(preview.calls[1]?.body).toMatchObject({ inputs: [{ properties: { plan: 'pro', logins: '1' } }] });
    expect(preview.notes).toEqual([expect.objectContaining({ code: 'crm_values_assumed_empty', fields: ['logins'] })]);
  });
});
