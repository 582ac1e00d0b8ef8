import { BillingLedgerList, type BillingLedgerQuery, BillingLedgerQuery as BillingLedgerQuerySchema } from '@ingest/schemas';
import { type LedgerReader, ledgerCsv } from '@ingest/domain';
import type { FastifyPluginAsync } from 'fastify';
import { problemResponses } from '@ingest/http';

export interface LedgerRoutesDeps {
  reader: LedgerReader;
}

/**
 * GET /admin/v1/billing/ledger: the billing ledger (closed months and plan changes), filtered by
 * account and month, as JSON or CSV (`format=csv`, for spreadsheets and invoicing tools).
 */
export function ledgerRoutes(deps: LedgerRoutesDeps): FastifyPluginAsync {
  return async (app) => {
    app.get<{ Querystring: BillingLedgerQuery }>(
      '/billing/ledger',
      {
        schema: {
          summary: 'Read the billing ledger (JSON, or CSV with format=csv)',
          tags: ['admin'],
          querystring: BillingLedgerQuerySchema,
          response: {
            200: {
              description: 'The ledger records, oldest first per account and month',
              content: {
                'application/json': { schema: BillingLedgerList },
                'text/csv': { schema: { type: 'string', description: 'The same records as CSV with a header row (format=csv)' } },
              },
            },
            ...problemResponses(400, 401, 429, 503),
          },
        },
      },
      async (request, reply) => {
        const { accountId, period, format } = request.query;
        const records = await deps.reader.list({ ...(accountId ? { accountId } : {}), ...(period ? { period } : {}) });
        if (format !== 'csv') return { records };
        // Sent as is: the response schema's CSV entry is for the OpenAPI document only.
        return reply
          .type('text/csv; charset=utf-8')
          .serializer((payload: unknown) => String(payload))
          .header('content-disposition', `attachment; filename="billing-ledger${period ? `-${period}` : ''}.csv"`)
          .send(ledgerCsv(records));
      },
    );
  };
}
