import { type Static, Type } from '@sinclair/typebox';
import { PlanSchema } from './control-plane.js';

/**
 * The billing ledger: closed records of what each account was charged, written once and never
 * rewritten (topic `billing.ledger`, compacted, one key per record; copied to the ClickHouse
 * table `billing_ledger`, which has no TTL).
 *
 * - `period_closed`: one per account and month, once the month has ended and every event
 *   received in it is stored: `eventsCharged` is ClickHouse's exact count of unique events
 *   received in the month; `plan` and `limit` are those in force at the month's end.
 * - `plan_changed`: written when the plan changes: `at` is the change, `plan`/`limit` the new
 *   ones, `previousPlan` the old; `eventsCharged` is the allowance counter at that moment (the
 *   gateway's view: it may include repeats that reconciliation later removes).
 * Both carry `overageRefused`: events refused for the allowance in the month up to `at`.
 */
export const LEDGER_KINDS = ['period_closed', 'plan_changed'] as const;

export const BillingLedgerRecord = Type.Object(
  {
    v: Type.Literal(1),
    kind: Type.Unsafe<(typeof LEDGER_KINDS)[number]>({ type: 'string', enum: [...LEDGER_KINDS] }),
    accountId: Type.String({ minLength: 1, maxLength: 64 }),
    period: Type.String({ pattern: '^[0-9]{6}$', description: 'The month, YYYYMM (UTC)' }),
    at: Type.String({ description: 'period_closed: the end of the month; plan_changed: the change (ISO 8601, UTC)' }),
    plan: PlanSchema,
    previousPlan: Type.Union([PlanSchema, Type.Null()]),
    limit: Type.Integer({ minimum: 0 }),
    eventsCharged: Type.Integer({ minimum: 0 }),
    overageRefused: Type.Integer({ minimum: 0 }),
    recordedAt: Type.String({ description: 'When the record was written (ISO 8601, UTC)' }),
  },
  { $id: 'BillingLedgerRecord' },
);
export type BillingLedgerRecord = Static<typeof BillingLedgerRecord>;

export const BillingLedgerQuery = Type.Object(
  {
    accountId: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
    period: Type.Optional(Type.String({ pattern: '^[0-9]{6}$' })),
    format: Type.Optional(Type.Unsafe<'json' | 'csv'>({ type: 'string', enum: ['json', 'csv'], default: 'json' })),
  },
  { additionalProperties: false },
);
export type BillingLedgerQuery = Static<typeof BillingLedgerQuery>;

export const BillingLedgerList = Type.Object({ records: Type.Array(BillingLedgerRecord) }, { $id: 'BillingLedgerList' });
