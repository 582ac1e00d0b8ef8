import { JOB_CHUNK_SIZE, type JobChunkItem } from '@ingest/schemas';

/**
 * A chunk message must stay well under the topic's max.message.bytes (8 MiB), so a chunk
 * closes at 500 events or 4 MiB, and a single event larger than 1 MiB (the limit of a whole
 * POST /v1/events body) is replaced by a per-event rejection instead of being written.
 */
export const MAX_EVENT_BYTES = 1024 * 1024;
export const MAX_CHUNK_BYTES = 4 * 1024 * 1024;

export function boundItem(item: JobChunkItem): { item: JobChunkItem; bytes: number } {
  const bytes = Buffer.byteLength(JSON.stringify(item.event) ?? 'null');
  if (bytes <= MAX_EVENT_BYTES) return { item, bytes };
  const bounded: JobChunkItem = {
    index: item.index,
    ...(item.row !== undefined ? { row: item.row } : {}),
    event: null,
    error: { code: 'too_large', message: `the event is ${bytes} bytes; at most ${MAX_EVENT_BYTES} bytes are allowed` },
  };
  return { item: bounded, bytes: 200 };
}

export function chunkItems(items: readonly JobChunkItem[], maxItems = JOB_CHUNK_SIZE, maxBytes = MAX_CHUNK_BYTES): JobChunkItem[][] {
  const chunks: JobChunkItem[][] = [];
  let current: JobChunkItem[] = [];
  let currentBytes = 0;
  for (const raw of items) {
    const { item, bytes } = boundItem(raw);
    if (current.length > 0 && (current.length >= maxItems || currentBytes + bytes > maxBytes)) {
      chunks.push(current);
      current = [];
      currentBytes = 0;
    }
    current.push(item);
    currentBytes += bytes;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}
