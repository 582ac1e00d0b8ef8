/**
 * Request bodies for POST /v1/events: events of about `eventBytes` of JSON each, every one with
 * a unique eventId, spread over a few thousand contacts (so events.unique's partitions, keyed by
 * identity, all get work).
 */
import type { EventRecord } from '@ingest/schemas';

const NAMES = ['Feature Used', 'Page Viewed', 'Signed Up', 'Report Exported', 'Invite Sent'];
const FEATURES = ['export', 'dashboards', 'alerts', 'sso', 'api'];
const CONTACTS = 5_000;

/**
 * The padding that brings an event to `eventBytes`: words drawn from 256 made-up ones (3 to 9
 * letters), a stand-in for the text of real properties. A run of one repeated letter, as before
 * 2026-11-29, compressed 8 times better than any real event and made KAFKA_COMPRESSION look
 * free (docs/kafka.md); words keep the bytes per event and let a compressor find only what text
 * offers. 4,096 pads are made once (a per-event draw would load the load generator).
 */
const PAD_WORDS = madeUpWords(256, 1);
const PADS = Array.from({ length: 4_096 }, (_, i) => padText(i + 1));

function padText(seed: number): string {
  const next = lcg(seed);
  let text = '';
  while (text.length < 2_048) text += `${PAD_WORDS[next() % PAD_WORDS.length]} `;
  return text;
}

function madeUpWords(count: number, seed: number): string[] {
  const next = lcg(seed);
  return Array.from({ length: count }, () => Array.from({ length: 3 + (next() % 7) }, () => String.fromCharCode(97 + (next() % 26))).join(''));
}

/** A small deterministic generator (Numerical Recipes' LCG constants): the same pads in every run. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state >>> 8;
  };
}

/** `length` characters of padding for event `n`. */
export function pad(n: number, length: number): string {
  if (length <= 0) return '';
  const text = PADS[n % PADS.length] ?? '';
  return length <= text.length ? text.slice(0, length) : text.repeat(Math.ceil(length / text.length)).slice(0, length);
}

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
    return head + pad(n, eventBytes - head.length - tail.length) + tail;
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
  properties.pad = pad(n, eventBytes - size);
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
