import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import type { JobChunkItem } from '@ingest/schemas';
import { expect } from 'vitest';
import { ProblemError } from '../http/problem.js';
import { type CsvReadOptions, readCsvEvents } from './csv-reader.js';

/** Shared by the csv-reader tests (not a test file itself). */
export const ACCOUNT = 'acc_1';
export const TS = '2024-05-01T10:00:00Z';

/** The documented id formula, computed independently of the implementation. */
export function idOf(cells: string[], occurrence = 0, accountId = ACCOUNT): string {
  return `csv_${createHash('sha256')
    .update(`${accountId}\n${JSON.stringify(cells)}\n${occurrence}`)
    .digest('hex')
    .slice(0, 32)}`;
}

/** Reads `input` (one chunk when given as a string or bytes) and collects what onChunk got. */
export async function read(input: string | Buffer | Readable, options: Partial<CsvReadOptions> = {}) {
  const chunks: { seq: number; items: JobChunkItem[] }[] = [];
  const result = await readCsvEvents(typeof input === 'string' || Buffer.isBuffer(input) ? Readable.from([input]) : input, {
    accountId: ACCOUNT,
    maxRows: 10_000,
    chunkSize: 500,
    onChunk: async (items, seq) => {
      chunks.push({ seq, items });
    },
    ...options,
  });
  return { result, chunks, items: chunks.flatMap((c) => c.items) };
}

export async function problemOf(promise: Promise<unknown>): Promise<ProblemError> {
  const error = await promise.then(
    () => {
      throw new Error('expected a ProblemError, the read succeeded');
    },
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ProblemError);
  return error as ProblemError;
}

/** A Readable that makes each row on demand and counts how many it made. */
export function lazyRows(header: string, count: number, row: (i: number) => string) {
  const source = { produced: 0 };
  const stream = Readable.from(
    (function* () {
      yield `${header}\n`;
      for (let i = 0; i < count; i += 1) {
        source.produced += 1;
        yield `${row(i)}\n`;
      }
    })(),
  );
  return { stream, source };
}
