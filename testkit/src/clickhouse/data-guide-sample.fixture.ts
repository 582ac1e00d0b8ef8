import { toEventLine } from '@ingest/domain';
import { EVENT_RECORD_VERSION, type EventRecord } from '@ingest/schemas';

/**
 * The data guide's sample (docs/data-guide.md, "How the examples are tested") and the answer
 * each example must give, computed here in TypeScript from the sample without ClickHouse, so an
 * engine that answers differently (18.16 or a current one) fails on its own.
 *
 * Deterministic: fixed times in November 2026. Three accounts (the examples read the first; the
 * others hold the same people so a missing account filter shows), anonymous, company-only and email-only
 * events, a late bulk import, events near midnight in UTC and in Berlin, and redelivered copies
 * inserted in a second batch with a later inserted_at (a read without deduplication counts them
 * twice until the parts merge).
 */

export const GUIDE_ACCOUNT = 'acc_guide_a';
/** The values of the examples' query parameters. */
export const GUIDE_PARAMS = { account: GUIDE_ACCOUNT, from: '2026-11-02', to: '2026-11-15', tz: 'Europe/Berlin', email: 'ann@acme.io' } as const;

type Props = Record<string, unknown>;
/** [account, id, name, email, time (UTC ISO), properties, received (ISO; default time + 2 s), source] */
type Row = [string, string, string, string, string, Props?, string?, 'bulk'?];

const A = GUIDE_ACCOUNT;
const ROWS: Row[] = [
  [A, 'a01', 'Signed Up', 'ann@acme.io', '2026-11-02T09:00:00Z', { plan: 'pro', referrer: 'search' }],
  [A, 'a02', 'Project Created', 'ann@acme.io', '2026-11-02T09:30:00Z', { template: 'blank' }],
  [A, 'a03', 'Invited Teammate', 'ann@acme.io', '2026-11-02T10:00:00Z'],
  [A, 'a04', 'Signed Up', 'bob@acme.io', '2026-11-02T11:00:00Z', { plan: 'free' }],
  [A, 'a05', 'Page Viewed', 'bob@acme.io', '2026-11-04T08:15:00Z', { url: '/pricing' }],
  // More than a day after bob's sign-up: outside the funnel's window.
  [A, 'a06', 'Project Created', 'bob@acme.io', '2026-11-04T12:00:00Z'],
  // 00:30 on the 4th in Berlin.
  [A, 'a07', 'Signed Up', 'cat@globex.com', '2026-11-03T23:30:00Z', { plan: 'pro' }],
  [A, 'a08', 'Project Created', 'cat@globex.com', '2026-11-04T01:00:00Z'],
  [A, 'a09', 'Page Viewed', 'dan@globex.com', '2026-11-04T14:05:00Z', { url: '/docs' }],
  [A, 'a10', 'Page Viewed', '', '2026-11-04T14:20:00Z', { url: '/' }],
  [A, 'a11', 'Page Viewed', 'ann@acme.io', '2026-11-03T09:10:00Z', { url: '/app' }],
  [A, 'a12', 'Page Viewed', 'ann@acme.io', '2026-11-09T09:00:00Z', { url: '/app', title: 'Tab\there, "quoted" \\ ü' }],
  [A, 'a13', 'Signed Up', 'eve@initech.net', '2026-11-10T16:00:00Z', { plan: 'growth' }],
  // Invited before creating a project: level 2 of the funnel, level 1 in strict order.
  [A, 'a14', 'Invited Teammate', 'eve@initech.net', '2026-11-10T16:10:00Z'],
  [A, 'a15', 'Project Created', 'eve@initech.net', '2026-11-10T16:20:00Z'],
  [A, 'a16', 'Account Updated', '', '2026-11-11T10:00:00Z', { seats: 12 }],
  [A, 'a17', 'Page Viewed', 'bob@acme.io', '2026-11-08T17:45:00Z', { url: '/pricing' }],
  // A sign-up without a plan.
  [A, 'a18', 'Signed Up', 'fay@acme.io', '2026-11-12T07:59:59Z', { referrer: 'ad' }],
  [A, 'a19', 'Plan Changed', 'ann@acme.io', '2026-11-12T12:00:00Z', { plan: 'growth', previous: 'pro' }],
  // Happened before the range, imported by a bulk job on the 3rd: billed on the 3rd.
  [A, 'a20', 'Page Viewed', 'ann@acme.io', '2026-10-30T10:00:00Z', { url: '/old' }, '2026-11-03T12:00:00Z', 'bulk'],
  // 00:30 on the 2nd in Berlin, still the 1st in UTC; and 00:30 on the 16th in Berlin.
  [A, 'a21', 'Page Viewed', 'dan@globex.com', '2026-11-01T23:30:00Z', { url: '/docs' }],
  [A, 'a22', 'Page Viewed', 'dan@globex.com', '2026-11-15T23:30:00Z', { url: '/docs' }],
  ['acc_guide_b', 'b01', 'Signed Up', 'ann@acme.io', '2026-11-02T09:05:00Z', { plan: 'free' }],
  ['acc_guide_b', 'b02', 'Page Viewed', 'zed@hooli.com', '2026-11-05T10:00:00Z'],
  ['acc_guide_c', 'c01', 'Project Created', 'zed@hooli.com', '2026-11-05T10:30:00Z'],
];

/** Sent with an email and no domain. */
const EMAIL_ONLY = new Set(['a09', 'a17']);

/** Delivered twice: the second copy arrives in a later insert. */
const REDELIVERED = new Set(['a01', 'a04', 'a07', 'a12', 'a13', 'a16', 'a19', 'a20', 'b01']);

function domainOf(email: string): string {
  return email.split('@')[1] ?? '';
}

/** The sample as the pipeline's records, each event once. */
export const GUIDE_EVENTS: EventRecord[] = ROWS.map(([accountId, eventId, eventName, email, at, properties = {}, received, source]) => {
  const timestampMs = Date.parse(at);
  return {
    v: EVENT_RECORD_VERSION,
    accountId,
    eventId,
    eventName,
    email: email || null,
    // Producers send the company beside the person, except: a company-only event, an email-only one.
    domain: eventId === 'a16' ? 'umbrella.org' : email && !EMAIL_ONLY.has(eventId) ? domainOf(email) : null,
    timestampMs,
    receivedAtMs: received ? Date.parse(received) : timestampMs + 2000,
    properties,
    source: source ?? 'api',
    jobId: source === 'bulk' ? 'job_guide_1' : null,
  };
});

/** The two inserts, in the writer's row format (`line`): every event, then the redelivered copies. */
export function guideInserts(line: (record: EventRecord, insertedAtMs: number) => string = toEventLine): string[][] {
  const first = GUIDE_EVENTS.map((e) => line(e, Date.parse('2026-11-20T00:00:00Z')));
  const again = GUIDE_EVENTS.filter((e) => REDELIVERED.has(e.eventId)).map((e) => line(e, Date.parse('2026-11-21T00:00:00Z')));
  return [first, again];
}

export type AnswerRow = Record<string, string>;

const DAY_MS = 86_400_000;
const utcDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);
const dayMs = (day: string) => Date.parse(`${day}T00:00:00Z`);
const addDays = (day: string, n: number) => utcDay(dayMs(day) + n * DAY_MS);
const inDays = (day: string, from: string, to: string) => day >= from && day <= to;
const monday = (day: string) => addDays(day, -((new Date(dayMs(day)).getUTCDay() + 6) % 7));

function localHour(ms: number, tz: string): { day: string; hour: string } {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', { timeZone: tz, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', hourCycle: 'h23' })
      .formatToParts(new Date(ms))
      .map((p) => [p.type, p.value]),
  );
  const day = `${parts.year}-${parts.month}-${parts.day}`;
  return { day, hour: `${day} ${parts.hour}:00` };
}

/** Rows grouped by a key, in key order, each group turned into one answer row. */
function groupRows<T>(items: T[], key: (t: T) => string, row: (k: string, group: T[]) => AnswerRow): AnswerRow[] {
  const groups = new Map<string, T[]>();
  for (const item of items) groups.set(key(item), [...(groups.get(key(item)) ?? []), item]);
  return [...groups.keys()].sort().map((k) => row(k, groups.get(k) ?? []));
}

const distinct = (values: string[]) => String(new Set(values.filter((v) => v !== '')).size);

const FUNNEL = ['Signed Up', 'Project Created', 'Invited Teammate'];

/**
 * windowFunnel's documented rule: a step counts when the previous step was reached and the event
 * is within the window of the chain's first event; strict order also stops at a funnel event that
 * is not the next step. (No person in the sample has a non-funnel event inside a chain, where
 * engines' strict modes have differed.)
 */
function funnelLevel(events: EventRecord[], windowMs: number, strictOrder: boolean): number {
  const steps = events.filter((e) => FUNNEL.includes(e.eventName)).sort((a, b) => a.timestampMs - b.timestampMs);
  let best = 0;
  for (const [i, start] of steps.entries()) {
    if (start.eventName !== FUNNEL[0]) continue;
    let level = 1;
    for (const e of steps.slice(i + 1)) {
      if (e.timestampMs - start.timestampMs > windowMs) break;
      if (e.eventName === FUNNEL[level]) level++;
      else if (strictOrder) break;
      if (level === FUNNEL.length) break;
    }
    best = Math.max(best, level);
  }
  return best;
}

/** The answer of every example of docs/data-guide.md, by its name, for GUIDE_PARAMS. */
export function expectedAnswers(): Record<string, AnswerRow[]> {
  const { account, from, to, tz, email } = GUIDE_PARAMS;
  const mine = GUIDE_EVENTS.filter((e) => e.accountId === account);
  const inRange = mine.filter((e) => inDays(utcDay(e.timestampMs), from, to));
  const people = (es: EventRecord[]) => distinct(es.map((e) => e.email ?? ''));
  const companies = (es: EventRecord[]) => distinct(es.map((e) => e.domain ?? ''));

  const funnel = (strict: boolean) =>
    groupRows(
      groupRows(
        inRange.filter((e) => e.email),
        (e) => e.email ?? '',
        (_, es) => ({ level: String(funnelLevel(es, DAY_MS, strict)) }),
      ),
      (r) => r.level ?? '',
      (level, rs) => ({ level, people: String(rs.length) }),
    );

  const daysOf = (who: string, es: EventRecord[]) => new Set(es.filter((e) => e.email === who).map((e) => utcDay(e.timestampMs)));
  const cohort = [...new Set(mine.filter((e) => e.email && utcDay(e.timestampMs) === from).map((e) => e.email ?? ''))];
  const back = (test: (day: string) => boolean) => String(cohort.filter((who) => [...daysOf(who, mine)].some(test)).length);

  const signups = inRange.filter((e) => e.eventName === 'Signed Up');
  const plan = (e: EventRecord) => (typeof e.properties.plan === 'string' ? e.properties.plan : '');
  const planBreakdown = groupRows(signups, plan, (p, es) => ({ plan: p, signups: String(es.length), people: people(es) }));

  const byName = groupRows(
    inRange,
    (e) => e.eventName,
    (name, es) => ({ event_name: name, event_count: String(es.length) }),
  );

  const latestPlan = groupRows(
    mine.filter((e) => e.email && (e.eventName === 'Signed Up' || e.eventName === 'Plan Changed')),
    (e) => e.email ?? '',
    (who, es) => ({ email: who, current_plan: plan([...es].sort((a, b) => b.timestampMs - a.timestampMs)[0] as EventRecord) }),
  );

  return {
    'daily-actives': groupRows(
      inRange,
      (e) => utcDay(e.timestampMs),
      (day, es) => ({ day, people: people(es), active_companies: companies(es) }),
    ),
    'weekly-actives': groupRows(
      inRange,
      (e) => monday(utcDay(e.timestampMs)),
      (week, es) => ({ week, people: people(es), active_companies: companies(es) }),
    ),
    funnel: funnel(false),
    'funnel-strict-order': funnel(true),
    retention: [
      {
        active_on_day_0: String(cohort.length),
        back_on_day_1: back((d) => d === addDays(from, 1)),
        back_in_week_2: back((d) => inDays(d, addDays(from, 7), addDays(from, 13))),
      },
    ],
    'plan-breakdown': planBreakdown,
    'plan-breakdown-jsonextract': planBreakdown,
    'plan-breakdown-json-column': planBreakdown,
    'top-companies': groupRows(
      inRange.filter((e) => e.domain),
      (e) => e.domain ?? '',
      (domain, es) => ({ domain, people: people(es), event_count: String(es.length) }),
    )
      // ORDER BY event_count DESC, domain: bytewise, like ClickHouse (the domains are ASCII).
      .sort((a, b) => Number(b.event_count) - Number(a.event_count) || ((a.domain ?? '') < (b.domain ?? '') ? -1 : 1))
      .slice(0, 10),
    'events-per-hour': groupRows(
      mine.filter((e) => inDays(localHour(e.timestampMs, tz).day, from, to)),
      (e) => localHour(e.timestampMs, tz).hour,
      (hour, es) => ({ local_hour: hour, event_count: String(es.length) }),
    ),
    'person-timeline': mine
      .filter((e) => e.email === email)
      .sort((a, b) => a.timestampMs - b.timestampMs || a.eventId.localeCompare(b.eventId))
      .map((e) => ({ event_id: e.eventId, name: e.eventName, at_ms: String(e.timestampMs), props: JSON.stringify(e.properties) })),
    'events-by-name-final': byName,
    'events-by-name-view': byName,
    'events-by-name-distinct': byName,
    'events-by-name-rollup': byName,
    'latest-plan': latestPlan,
    'billed-per-day': groupRows(
      mine.filter((e) => inDays(utcDay(e.receivedAtMs), from, to)),
      (e) => utcDay(e.receivedAtMs),
      (day, es) => ({ day, billed: String(es.length) }),
    ),
  };
}
