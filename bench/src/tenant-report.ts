/** The tenant mix's own figures (npm run bench:tenants): accounts, plans, answers and refusals per phase. */
import type { Plan } from '@ingest/domain';
import type { LoadCounters } from './load.js';
import { n0, n1, percentile } from './say.js';

export interface TenantPhase {
  name: string;
  seconds: number;
  load: LoadCounters;
  /** Send -> 202, ms. */
  latency202Ms: { p50?: number; p99?: number };
}

export interface TenantMixResult {
  accounts: number;
  zipfS: number;
  budgetEvents: number;
  byPlan: Record<Plan, { accounts: number; share: number }>;
  /** Share of the traffic of the busiest account, and of the top 10. */
  topShare: { first: number; top10: number };
  setupS: number;
  sizes: string;
  meanEventsPerRequest: number;
  retryPercent: number;
  ids: Record<string, number>;
  requests: number;
  retries: number;
  /** Events sent over the whole run (warm-ups, drains and retries included), against budgetEvents. */
  events: number;
  phases: TenantPhase[];
}

/** Refused events: in requests answered 402 or 429, and those a 202 rejected (quota_exceeded). */
export function refusals(c: LoadCounters): { events402: number; events429: number; rejectedIn202: number; share: number } {
  const events402 = c.eventsByStatus[402] ?? 0;
  const events429 = c.eventsByStatus[429] ?? 0;
  const refused = events402 + events429 + c.eventsRejected;
  return { events402, events429, rejectedIn202: c.eventsRejected, share: c.eventsSent > 0 ? refused / c.eventsSent : 0 };
}

export function phaseOf(name: string, seconds: number, load: LoadCounters, latencies202: number[]): TenantPhase {
  return { name, seconds, load, latency202Ms: { p50: percentile(latencies202, 50), p99: percentile(latencies202, 99) } };
}

export function formatTenantMix(t: TenantMixResult): string[] {
  const pct = (x: number) => `${n1(x * 100)}%`;
  const plans = Object.entries(t.byPlan)
    .map(([plan, p]) => `${plan} ${n0(p.accounts)} (${pct(p.share)} of the traffic)`)
    .join(', ');
  const ids = Object.entries(t.ids)
    .map(([k, v]) => `${k} ${n0(v)}`)
    .join(', ');
  const out = [
    `\nTenant mix: ${n0(t.accounts)} accounts, Zipf s=${t.zipfS} (busiest ${pct(t.topShare.first)}, top 10 ${pct(t.topShare.top10)} of the traffic), created through the admin API in ${n1(t.setupS)} s`,
    `  plans                  ${plans}; each the smallest plan covering its share of ${n0(t.budgetEvents)} events; allowances, per-account rate limits, seen ids and dedupe as in production`,
    `  whole run              ${n0(t.events)} events sent against the plans' budget of ${n0(t.budgetEvents)}: ${t.events > t.budgetEvents ? 'over it, so the accounts at the top of each plan band can run out (402)' : 'within it, so no allowance runs out unless the traffic strays from its shares'}`,
    `  requests               sizes ${t.sizes} (events:share of requests), mean ${n1(t.meanEventsPerRequest)} events; ${n0(t.requests)} sent, ${n0(t.retries)} of them retries (${t.retryPercent}% of first sends, same ids); events by id kind: ${ids}`,
    `  ${'phase'.padEnd(22)} ${'sent ev/s'.padStart(10)} ${'accepted'.padStart(10)} ${'202 p50/p99 ms'.padStart(15)}  requests 202 / 402 / 429 / other    refused events (402, 429, rejected in 202s)`,
  ];
  for (const p of t.phases) {
    const c = p.load;
    const other = c.requests - (c.byStatus[202] ?? 0) - (c.byStatus[402] ?? 0) - (c.byStatus[429] ?? 0);
    const r = refusals(c);
    out.push(
      `  ${p.name.padEnd(22)} ${n0(c.eventsSent / p.seconds).padStart(10)} ${n0(c.eventsAccepted / p.seconds).padStart(10)} ${`${n0(p.latency202Ms.p50)} / ${n0(p.latency202Ms.p99)}`.padStart(15)}  ` +
        `${`${n0(c.byStatus[202] ?? 0)} / ${n0(c.byStatus[402] ?? 0)} / ${n0(c.byStatus[429] ?? 0)} / ${n0(other)}`.padEnd(34)} ${pct(r.share)} (${n0(r.events402)}, ${n0(r.events429)}, ${n0(r.rejectedIn202)})`,
    );
  }
  return out;
}
