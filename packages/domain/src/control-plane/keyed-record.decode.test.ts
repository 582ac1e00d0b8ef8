import { Type } from '@sinclair/typebox';
import { describe, expect, it } from 'vitest';
import { createAccountDecoder } from './control-plane.state.js';
import { createCredentialDecoder, credentialKey } from './crm-config.state.js';
import { createKeyedRecordDecoder } from './keyed-record.decode.js';

const Thing = Type.Object({ id: Type.String({ pattern: '^t_' }), size: Type.Integer() });
type Thing = { id: string; size: number };
const buf = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value));

describe('createKeyedRecordDecoder', () => {
  const decode = createKeyedRecordDecoder<Thing, Thing>(Thing, {
    keyOf: (t) => t.id,
    pick: (t) => Object.freeze({ id: t.id, size: t.size }),
    idMismatch: 'value id differs from the message key',
  });

  it('gives the picked record, a tombstone as null, and each refusal with a reason that never quotes the value', () => {
    expect(decode(buf('t_1'), buf({ id: 't_1', size: 2, newer: 'field' }))).toEqual({ ok: true, id: 't_1', value: { id: 't_1', size: 2 } });
    expect(decode(buf('t_1'), null)).toEqual({ ok: true, id: 't_1', value: null });
    expect(decode(null, buf({ id: 't_1', size: 2 }))).toEqual({ ok: false, code: 'missing_key', reason: 'message has no key' });
    expect(decode(buf('t_1'), buf('{"secret": "hunter2'))).toEqual({ ok: false, code: 'invalid_json', reason: 'value is not JSON' });
    expect(decode(buf('t_1'), buf({ id: 'x_secret', size: 2 }))).toEqual({ ok: false, code: 'schema_mismatch', reason: 'value /id must match pattern "^t_"' });
    expect(decode(buf('t_2'), buf({ id: 't_1', size: 2 }))).toEqual({ ok: false, code: 'id_mismatch', reason: 'value id differs from the message key' });
  });

  it('keeps the reasons each control topic gave before it was shared', () => {
    expect(createAccountDecoder()(buf('acc_b'), buf('nope'))).toMatchObject({ code: 'invalid_json', reason: 'value is not JSON' });
    const credential = { accountId: 'acc_1', name: 'hubspot', credential: { type: 'hubspot' }, updatedAt: '2026-01-01T00:00:00.000Z' };
    expect(createCredentialDecoder()(buf(credentialKey('acc_2', 'hubspot')), buf(credential))).toMatchObject({
      code: 'id_mismatch',
      reason: 'value does not belong to the message key',
    });
  });
});
