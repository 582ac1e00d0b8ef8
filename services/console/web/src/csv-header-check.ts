/**
 * The browser's early check of a CSV header, so an owner learns of a wrong file before
 * uploading it. The rules are the server's own (`@ingest/schemas/csv-columns`, which the
 * server's csv-header.ts in @ingest/http also reads headers with): the server stays the
 * authority, a file that passes here is still checked there. Only that pure module is imported
 * (not `@ingest/schemas` itself), so TypeBox and Ajv stay out of the bundle.
 */
import { resolveCsvColumns } from '@ingest/schemas/csv-columns';

export function csvHeaderProblems(header: readonly string[]): string[] {
  return resolveCsvColumns(header).problems.map((p) => `${p.message.charAt(0).toUpperCase()}${p.message.slice(1)}.`);
}
