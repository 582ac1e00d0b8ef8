import { randomUUID } from 'node:crypto';

/** State, call log, rate limits and injected faults of the fake CRM, shared by its route files. */
export type FakeCrmName = 'hubspot' | 'salesforce' | 'webhook';

export interface FakeRecord {
  id: string;
  properties: Record<string, unknown>;
  /** Ids of the records this one is associated with (HubSpot note associations, Salesforce WhoId/WhatId). */
  associations: string[];
}

export interface FakeCall {
  /** Epoch milliseconds when the request arrived. */
  at: number;
  crm: FakeCrmName;
  method: string;
  path: string;
  /** Bearer token (HubSpot, Salesforce) or receiver name (webhook). */
  token: string | undefined;
  /** Inputs, records or activities in the body; 0 for reads by query. */
  batchSize: number;
  /** The parsed JSON body, so a test can compare it with a dry-run's planned request. */
  body: unknown;
  /** Status answered; 0 while the request is in flight. */
  status: number;
  /** Webhook: the Standard Webhooks delivery id. */
  webhookId?: string;
}

export interface RateLimit {
  max: number;
  windowMs: number;
}

export interface FailSpec {
  /** Status to answer in the CRM's error format; omitted with `delayMs`: answer normally, late. */
  status?: number;
  retryAfterSeconds?: number;
  /** A raw Retry-After value instead, e.g. an HTTP-date. */
  retryAfter?: string;
  /** How many requests this fault applies to (default 1). */
  times?: number;
  /** Only requests with this token (= one account); default all. */
  token?: string;
  crm?: FakeCrmName;
  /** Only requests whose path starts with this, e.g. one endpoint of a call that makes several requests. */
  path?: string;
  /** Wait before answering: longer than a client's timeout simulates a hung CRM. */
  delayMs?: number;
  /** Answer 200 with a body of this many bytes (streamed, never held in memory): a CRM gone wrong. */
  bodyBytes?: number;
}

/** How the fake Salesforce pages query results (`nextRecordsUrl`), as the real API does past its batch size. */
export interface SalesforcePaging {
  /** Records per page (Salesforce: 200 to 2,000; default 2,000). */
  pageSize?: number;
  /** Every page answers `done: false` with a fresh locator: an instance gone wrong. */
  endless?: boolean;
  /** Answer this `nextRecordsUrl` instead of a locator of this instance. */
  nextRecordsUrl?: string;
}

export class FakeCrmState {
  readonly calls: FakeCall[] = [];
  salesforcePaging: SalesforcePaging = {};
  /** Query locators (the tail of `nextRecordsUrl`) to the records still to page through. */
  readonly salesforceCursors = new Map<string, Record<string, unknown>[]>();
  private readonly stores = new Map<string, Map<string, FakeRecord>>();
  private faults: (FailSpec & { remaining: number })[] = [];
  private readonly windows = new Map<string, { startedAt: number; count: number }>();
  private nextId = 1000;

  constructor(readonly rateLimits: Partial<Record<FakeCrmName, RateLimit>>) {}

  store(crm: FakeCrmName, object: string): Map<string, FakeRecord> {
    const name = `${crm}/${object}`;
    let store = this.stores.get(name);
    if (!store) this.stores.set(name, (store = new Map()));
    return store;
  }

  newId(): string {
    return String(this.nextId++);
  }

  addFault(spec: FailSpec): void {
    this.faults.push({ ...spec, remaining: spec.times ?? 1 });
  }

  clearFaults(): void {
    this.faults = [];
  }

  /** The first fault that applies to this request, used up by one. */
  takeFault(crm: FakeCrmName, token: string | undefined, path = ''): FailSpec | undefined {
    const fault = this.faults.find(
      (f) =>
        f.remaining > 0 &&
        (f.crm === undefined || f.crm === crm) &&
        (f.token === undefined || f.token === token) &&
        (f.path === undefined || path.startsWith(f.path)),
    );
    if (fault) fault.remaining -= 1;
    return fault;
  }

  /** Fixed windows per (CRM, token): seconds until the window resets when over the limit. */
  overRateLimit(crm: FakeCrmName, token: string, now = Date.now()): number | undefined {
    const limit = this.rateLimits[crm];
    if (!limit) return undefined;
    const key = `${crm}/${token}`;
    let window = this.windows.get(key);
    if (!window || now - window.startedAt >= limit.windowMs) this.windows.set(key, (window = { startedAt: now, count: 0 }));
    window.count += 1;
    if (window.count <= limit.max) return undefined;
    return Math.max(1, Math.ceil((window.startedAt + limit.windowMs - now) / 1000));
  }

  reset(): void {
    this.calls.length = 0;
    this.stores.clear();
    this.faults = [];
    this.windows.clear();
    this.salesforcePaging = {};
    this.salesforceCursors.clear();
  }
}

export function hubspotError(category: string, message: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { status: 'error', message, correlationId: randomUUID(), category, ...extra };
}

export function salesforceError(errorCode: string, message: string): { message: string; errorCode: string }[] {
  return [{ message, errorCode }];
}

export function bearerToken(header: string | undefined): string | undefined {
  const match = /^Bearer\s+(\S+)$/i.exec(header ?? '');
  return match?.[1];
}
