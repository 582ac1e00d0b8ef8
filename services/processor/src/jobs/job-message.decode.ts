import { JobAborted, JobChunk, type JobMessage, JobSealed, createAjv } from '@ingest/schemas';
import type { ErrorObject, ValidateFunction } from 'ajv';

export type JobMessageDecodeResult = { ok: true; message: JobMessage } | { ok: false; code: string; reason: string };

const JOB_MESSAGE_VERSION = 1;

/**
 * Pure: bytes from `jobs.chunks` to a checked JobMessage, or the reason it is a poison message.
 * Each message type is checked against its own schema (picked by `type`), so the reason names
 * the real problem instead of the three failed branches of a union. Reasons carry paths and
 * ids only, never event contents.
 */
export function createJobMessageDecoder(): (value: Buffer | null) => JobMessageDecodeResult {
  const ajv = createAjv('first');
  const validators: Record<JobMessage['type'], ValidateFunction> = {
    chunk: ajv.compile(JobChunk),
    sealed: ajv.compile(JobSealed),
    aborted: ajv.compile(JobAborted),
  };

  return (value) => {
    if (value === null || value.length === 0) return { ok: false, code: 'empty_message', reason: 'message has no value' };
    let parsed: unknown;
    try {
      parsed = JSON.parse(value.toString('utf8'));
    } catch (err) {
      return { ok: false, code: 'invalid_json', reason: `value is not JSON: ${(err as Error).message}` };
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      return { ok: false, code: 'schema_mismatch', reason: 'job message must be a JSON object' };
    }
    const { v, type } = parsed as { v?: unknown; type?: unknown };
    if (v !== JOB_MESSAGE_VERSION) {
      return { ok: false, code: 'unknown_version', reason: `unknown job message version ${JSON.stringify(v ?? null)}` };
    }
    if (type !== 'chunk' && type !== 'sealed' && type !== 'aborted') {
      return { ok: false, code: 'unknown_message_type', reason: `unknown job message type ${JSON.stringify(type ?? null).slice(0, 100)}` };
    }
    const validate = validators[type];
    if (!validate(parsed)) return { ok: false, code: 'schema_mismatch', reason: `job ${type} message ${describe(validate.errors?.[0])}` };
    return { ok: true, message: parsed as JobMessage };
  };
}

function describe(error: ErrorObject | undefined): string {
  if (!error) return 'is invalid';
  const where = error.instancePath || '/';
  return `${where} ${error.message ?? 'is invalid'}`;
}
