import { EVENT_RECORD_VERSION, EventRecord, compileValidator } from '@ingest/schemas';

export type DecodeResult = { ok: true; record: EventRecord } | { ok: false; code: string; reason: string };

/** Pure: bytes from Kafka to a checked EventRecord, or the reason it is a poison message. */
export function createEventRecordDecoder(): (value: Buffer | null) => DecodeResult {
  const validate = compileValidator<EventRecord>(EventRecord);
  return (value) => {
    if (value === null || value.length === 0) return { ok: false, code: 'empty_message', reason: 'message has no value' };
    let parsed: unknown;
    try {
      parsed = JSON.parse(value.toString('utf8'));
    } catch {
      // JSON.parse's message quotes the input, and reasons must not carry event contents.
      return { ok: false, code: 'invalid_json', reason: `value of ${value.length} bytes is not valid JSON` };
    }
    const version = (parsed as { v?: unknown } | null)?.v;
    if (version !== EVENT_RECORD_VERSION) {
      return { ok: false, code: 'unknown_version', reason: `unknown event record version ${JSON.stringify(version ?? null)}` };
    }
    if (!validate(parsed)) {
      const first = validate.errors?.[0];
      return { ok: false, code: 'schema_mismatch', reason: `event record ${first?.instancePath || '/'} ${first?.message ?? 'is invalid'}` };
    }
    return { ok: true, record: parsed };
  };
}
