/**
 * Request bodies for POST /v1/events: events of about `eventBytes` of JSON each, every one with
 * a unique eventId, spread over a few thousand contacts (so events.unique's partitions, keyed by
 * identity, all get work).
 */
import type { EventRecord } from '@ingest/schemas';

const NAMES = ['Feature Used', 'Page Viewed', 'Signed Up', 'Report Exported', 'Invite Sent'];
const FEATURES = ['export', 'dashboards', 'alerts', 'sso', 'api'];
const CONTACTS = 5_000;

export interface BodyFactory {
  /** A request body with `count` events, and the number of events in it. */
  body(count: number): { body: string; events: number };
  /** One event with this id (the freshness probes). */
  probe(eventId: string): string;
}

export function createBodyFactory(runId: string, eventBytes: number): BodyFactory {
  let seq = 0;
  function event(eventId: string, n: number, name: string): string {
    const head = `{"eventId":"${eventId}","eventName":"${name}","email":"user${n % CONTACTS}@bench${n % 7}.example.com","properties":{"plan":"growth","feature":"${FEATURES[n % FEATURES.length]}","step":${n % 1000},"pad":"`;
    const tail = '"}}';
    return head + 'x'.repeat(Math.max(0, eventBytes - head.length - tail.length)) + tail;
  }
  return {
    body(count) {
      const events: string[] = [];
      for (let i = 0; i < count; i++) {
        const n = seq++;
        events.push(event(`${runId}-${n}`, n, NAMES[n % NAMES.length] ?? 'Feature Used'));
      }
      return { body: `{"events":[${events.join(',')}]}`, events: count };
    },
    probe(eventId) {
      return `{"events":[${event(eventId, seq++, 'Bench Probe')}]}`;
    },
  };
}

/** The record the gateway would write for one of those events (for the ClickHouse baseline). */
export function sampleRecord(accountId: string, runId: string, n: number, eventBytes: number, nowMs: number): EventRecord {
  const properties = { plan: 'growth', feature: FEATURES[n % FEATURES.length], step: n % 1000, pad: '' };
  const size = JSON.stringify({ eventId: `${runId}-${n}`, eventName: 'Feature Used', email: `user${n % CONTACTS}@bench.example.com`, properties }).length;
  properties.pad = 'x'.repeat(Math.max(0, eventBytes - size));
  return {
    v: 1,
    accountId,
    eventId: `${runId}-${n}`,
    eventName: NAMES[n % NAMES.length] ?? 'Feature Used',
    email: `user${n % CONTACTS}@bench${n % 7}.example.com`,
    domain: null,
    timestampMs: nowMs,
    receivedAtMs: nowMs,
    properties,
    source: 'api',
    jobId: null,
  };
}
