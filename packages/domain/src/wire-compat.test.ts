/**
 * Wire contracts across a rolling deploy (docs/architecture.md, "Wire contracts"): a reader one
 * release behind takes the record of a newer writer that added optional fields, for every kind
 * of record the services exchange through Kafka. Each decoder is given a valid record with
 * fields it does not know and must accept it (not dead-letter it, not drop it from its state).
 * The job messages' own test is services/processor/src/jobs/job-message.decode.test.ts.
 */
import {
  AccountSchema,
  AdminCredentialWire,
  ApiKeyRecordSchema,
  AuditRecord,
  BillingLedgerRecord,
  EventRecord,
  JobAborted,
  JobChunk,
  JobSealed,
  StoredCrmCredentialRecord,
  StoredMappingRecord,
} from '@ingest/schemas';
import { describe, expect, it } from 'vitest';
import { decodeAuditRecord } from './audit/audit-record.js';
import { decodeLedgerRecord } from './ledger/ledger-record.js';
import { createAccountDecoder, createApiKeyDecoder } from './control-plane/control-plane.state.js';
import { createOwnerDecoder } from './control-plane/owners.state.js';
import { createEventRecordDecoder } from './events/event-record.decode.js';

/** What a newer writer might add: a scalar, an object, a list. */
const LATER = { addedLater: 'x', addedLaterObject: { a: 1 }, addedLaterList: [1, 2] };
const buf = (value: unknown) => Buffer.from(JSON.stringify(value));

describe('an older reader takes a newer writer record', () => {
  it('events.raw, events.unique and crm.replay: EventRecord', () => {
    const record = {
      v: 1,
      accountId: 'acc_1',
      eventId: 'ev-1',
      eventName: 'Signed Up',
      email: 'ada@example.com',
      domain: null,
      timestampMs: 1_767_225_600_000,
      receivedAtMs: 1_767_225_600_000,
      properties: {},
      source: 'api',
      jobId: null,
    };
    expect(createEventRecordDecoder()(buf({ ...record, ...LATER }))).toMatchObject({ ok: true, record });
  });

  it('control.accounts and control.apikeys: the state keeps what it knows', () => {
    const account = { id: 'acc_1', name: 'Acme', plan: 'pro', createdAt: '2026-01-01T00:00:00.000Z', updatedAt: '2026-01-01T00:00:00.000Z' };
    expect(createAccountDecoder()(Buffer.from('acc_1'), buf({ ...account, ...LATER }))).toEqual({ ok: true, id: 'acc_1', value: account });
    const key = {
      id: 'key_1',
      accountId: 'acc_1',
      name: 'default',
      prefix: 'svc_live_Ab3dE9',
      hash: 'a'.repeat(64),
      createdAt: '2026-01-01T00:00:00.000Z',
      revokedAt: null,
    };
    expect(createApiKeyDecoder()(Buffer.from('key_1'), buf({ ...key, ...LATER }))).toEqual({ ok: true, id: 'key_1', value: key });
  });

  it('control.owners', () => {
    const owner = { id: 'own_1', accountId: 'acc_1', email: 'ada@example.com', passwordHash: 'scrypt$x', createdAt: '2026-01-01T00:00:00.000Z' };
    expect(createOwnerDecoder()(Buffer.from('ada@example.com'), buf({ ...owner, ...LATER }))).toMatchObject({ ok: true, value: owner });
  });

  it('audit.log and billing.ledger', () => {
    const audit = {
      v: 1,
      id: 'aud_1',
      at: '2026-03-01T10:00:00.123Z',
      actor: { type: 'admin', name: 'ada', role: 'operator', addedLater: true },
      action: 'account.suspend',
      accountId: 'acc_1',
      target: null,
      ip: '10.0.0.1',
      requestId: 'r1',
      before: null,
      after: { suspension: { reason: 'abuse' } },
    };
    expect(decodeAuditRecord(buf({ ...audit, ...LATER }))).toMatchObject({ ...audit, actor: { type: 'admin', name: 'ada' } });
    const ledger = {
      v: 1,
      kind: 'period_closed',
      accountId: 'acc_1',
      period: '202603',
      at: '2026-04-01T00:00:00.000Z',
      plan: 'pro',
      previousPlan: null,
      limit: 100_000,
      eventsCharged: 12,
      overageRefused: 0,
      recordedAt: '2026-04-01T00:05:00.000Z',
    };
    expect(decodeLedgerRecord(buf({ ...ledger, ...LATER }))).toMatchObject(ledger);
  });

  /**
   * Every wire schema is open at every level, so no decoder built on it refuses a newer field.
   * One exception, on purpose: the sealed credential envelope, whose `alg` names its format (a
   * field it does not know could change how it decrypts: such a change is a new `alg`, or a new
   * `aad` version, which a release that does not know it refuses as unreadable).
   */
  it.each([
    ['EventRecord', EventRecord],
    ['JobChunk', JobChunk],
    ['JobSealed', JobSealed],
    ['JobAborted', JobAborted],
    ['AccountSchema', AccountSchema],
    ['ApiKeyRecordSchema', ApiKeyRecordSchema],
    ['AdminCredentialWire', AdminCredentialWire],
    ['StoredMappingRecord', StoredMappingRecord],
    ['StoredCrmCredentialRecord', StoredCrmCredentialRecord],
    ['AuditRecord', AuditRecord],
    ['BillingLedgerRecord', BillingLedgerRecord],
  ])('%s closes no object to fields it does not know', (name, schema) => {
    const closed = closedObjects(schema, name).filter((path) => path !== 'StoredCrmCredentialRecord/properties/sealed');
    expect(closed).toEqual([]);
  });
});

/** JSON-Schema paths of the objects that refuse unknown properties (`additionalProperties: false`). */
function closedObjects(schema: unknown, path: string): string[] {
  if (!schema || typeof schema !== 'object') return [];
  if (Array.isArray(schema)) return schema.flatMap((s, i) => closedObjects(s, `${path}/${i}`));
  const node = schema as Record<string, unknown>;
  const here = node.additionalProperties === false ? [path] : [];
  return [
    ...here,
    ...Object.entries(node)
      .filter(([k]) => ['properties', 'items', 'anyOf', 'oneOf', 'allOf', 'patternProperties', 'additionalProperties'].includes(k))
      .flatMap(([k, v]) =>
        k === 'properties' || k === 'patternProperties'
          ? Object.entries(v as Record<string, unknown>).flatMap(([p, s]) =>
              closedObjects(s, `${path}/${k === 'properties' ? 'properties/' : 'patternProperties/'}${p}`),
            )
          : closedObjects(v, `${path}/${k}`),
      ),
  ];
}
