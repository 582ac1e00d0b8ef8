import { BulkJobReceipt } from '@ingest/schemas';
import type { FastifyPluginAsync } from 'fastify';
import { type CsvUploadDeps, handleCsvUpload, problemResponses, registerCsvMultipart } from '@ingest/http';
import { authOf } from '../auth/auth.hook.js';
import { idempotencyHeaderSchema } from '../jobs/idempotency.schema.js';

export { MAX_CSV_BYTES } from '@ingest/http';
export type CsvRouteDeps = CsvUploadDeps;

/** POST /v1/backfill/csv: a CSV file streamed into a job (csv-upload.ts in @ingest/http), authenticated by API key. */
export function csvRoutes(deps: CsvRouteDeps): FastifyPluginAsync {
  return async (app) => {
    await registerCsvMultipart(app);

    app.post(
      '/backfill/csv',
      {
        ...deps.uploadSlots,
        // Never publishable keys: a copied browser key must not start jobs (docs/security.md).
        config: { apiScope: 'events:write' },
        validatorCompiler: () => () => true,
        schema: {
          summary: 'Upload a CSV file of historical events as a background job',
          tags: ['jobs'],
          consumes: ['multipart/form-data'],
          headers: idempotencyHeaderSchema,
          // Documents the upload for OpenAPI; the route reads the stream itself (see validatorCompiler).
          body: {
            type: 'object',
            required: ['file'],
            properties: {
              delimiter: {
                type: 'string',
                enum: [',', ';', '\t', 'comma', 'semicolon', 'tab'],
                description: 'Optional, before the file part: the delimiter; detected from the header when absent.',
              },
              timezone: {
                type: 'string',
                description: 'Optional, before the file part: the IANA time zone (e.g. Europe/Berlin) of timestamps written without a zone.',
              },
              file: {
                type: 'string',
                format: 'binary',
                description: 'The CSV file, UTF-8 or .csv.gz: header row, at most 50 MB (decompressed) and 10,000 rows.',
              },
            },
          },
          response: { 202: BulkJobReceipt, ...problemResponses(400, 401, 402, 403, 409, 413, 415, 422, 429, 503, 504) },
        },
      },
      async (request, reply) => handleCsvUpload(request, reply, authOf(request).account, deps, '/v1/backfill/csv'),
    );
  };
}
