// The decoder moved to the shared library: the crm-sink decodes the same records.
export { createEventRecordDecoder, type DecodeResult } from '@ingest/domain';
