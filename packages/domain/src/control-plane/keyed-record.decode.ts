import { compileValidator } from '@ingest/schemas';
import type { ValidateFunction } from 'ajv';

/**
 * The one way a compacted control topic's record is decoded (accounts, API keys, admin
 * credentials, mapping versions, CRM credentials): key = the record's identity, a null value is
 * a tombstone, a value is JSON checked against its schema, then reduced to the state's shape.
 */
export type DecodedKeyedRecord<T> =
  | { ok: true; id: string; value: T | null }
  /** `reason` names what was wrong, never the message's contents (it may hold secrets). */
  | { ok: false; code: 'missing_key' | 'invalid_json' | 'schema_mismatch' | 'id_mismatch'; reason: string };

export type RecordDecoder<T> = (key: Buffer | null, value: Buffer | null) => DecodedKeyedRecord<T>;

export interface KeyedRecordRules<W, T> {
  /** The message key a record of these fields must be written under. */
  keyOf(wire: W): string;
  /**
   * The record as the state holds it, frozen. Unknown properties are tolerated on the wire (a
   * newer writer's, see schemas/src/control-plane.ts) and dropped here.
   */
  pick(wire: W): T;
  /** The `id_mismatch` reason: what tells the key and the value apart. */
  idMismatch: string;
}

/** Compiles `schema` once (on use, never at import time) into a decoder that follows `rules`. */
export function createKeyedRecordDecoder<W, T>(schema: object, rules: KeyedRecordRules<W, T>): RecordDecoder<T> {
  const validate = compileValidator<W>(schema);
  return (key, value) => {
    const id = key?.toString('utf8') ?? '';
    if (id === '') return { ok: false, code: 'missing_key', reason: 'message has no key' };
    if (value === null) return { ok: true, id, value: null };
    const checked = decodeChecked(value, validate);
    if (!checked.ok) return checked;
    if (rules.keyOf(checked.wire) !== id) return { ok: false, code: 'id_mismatch', reason: rules.idMismatch };
    return { ok: true, id, value: rules.pick(checked.wire) };
  };
}

/** Decode-or-reason: the value as JSON of `validate`'s schema, or why it is not (naming the rule and path, never the value). */
export function decodeChecked<W>(
  value: Buffer,
  validate: ValidateFunction<W>,
): { ok: true; wire: W } | { ok: false; code: 'invalid_json' | 'schema_mismatch'; reason: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(value.toString('utf8'));
  } catch {
    // JSON.parse's message quotes the input, which may hold a secret: not logged.
    return { ok: false, code: 'invalid_json', reason: 'value is not JSON' };
  }
  if (!validate(parsed)) {
    // ajv's message names the rule, not the value ("must match pattern ..."): safe to log.
    const first = validate.errors?.[0];
    return { ok: false, code: 'schema_mismatch', reason: `value ${first?.instancePath || '/'} ${first?.message ?? 'is invalid'}` };
  }
  return { ok: true, wire: parsed };
}
