/**
 * The tenant mix's requests: each from the key of an account drawn by its Zipf share, of a size
 * drawn from the size mix, its events carrying caller-chosen ids as SDKs send them (UUIDv7 from
 * our SDK, random UUIDv4 from callers that make their own), and a share of them sent a second
 * time a little later with the same body and ids, as a client retries after a timeout: the
 * allowance's seen ids make the retry free and the processor's dedupe drops its events.
 */
import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { pad } from './events.js';
import type { OutgoingRequest, RequestSource } from './load.js';
import { createSizeSampler, createZipfSampler, describeSizeMix, type Random, type SizeMix } from './tenant-mix.js';

export interface TenantKey {
  apiKey: string;
  share: number;
  /** How this account's client names its events. */
  ids: 'uuidv7' | 'uuidv4';
  /** Its own host name in contacts' emails, so identities differ per account. */
  domain: string;
}

export interface TenantSourceStats {
  requests: number;
  retries: number;
  /** Events in all requests, retries included. */
  events: number;
  eventsByIds: Record<TenantKey['ids'], number>;
}

export interface TenantSource extends RequestSource {
  stats(): TenantSourceStats;
}

const NAMES = ['Feature Used', 'Page Viewed', 'Signed Up', 'Report Exported', 'Invite Sent'];
const FEATURES = ['export', 'dashboards', 'alerts', 'sso', 'api'];
const CONTACTS_PER_ACCOUNT = 500;
/** A retry goes out this many requests after the first send (about a second at the rates reached here). */
const RETRY_AFTER_REQUESTS = 500;

export function createTenantSource(o: { keys: TenantKey[]; sizes: SizeMix; retryShare: number; eventBytes: number; random: Random }): TenantSource {
  const drawAccount = createZipfSampler(
    o.keys.map((k) => k.share),
    o.random,
  );
  const drawSize = createSizeSampler(o.sizes, o.random);
  const retries: { dueAt: number; request: OutgoingRequest }[] = [];
  const stats: TenantSourceStats = { requests: 0, retries: 0, events: 0, eventsByIds: { uuidv7: 0, uuidv4: 0 } };
  let seq = 0;

  function event(key: TenantKey): string {
    const n = seq++;
    const eventId = key.ids === 'uuidv7' ? uuidv7() : randomUUID();
    const head = `{"eventId":"${eventId}","eventName":"${NAMES[n % NAMES.length]}","email":"user${n % CONTACTS_PER_ACCOUNT}@${key.domain}","properties":{"plan":"growth","feature":"${FEATURES[n % FEATURES.length]}","step":${n % 1000},"pad":"`;
    const tail = '"}}';
    return head + pad(n, o.eventBytes - head.length - tail.length) + tail;
  }

  return {
    meanEventsPerRequest: describeSizeMix(o.sizes).meanEvents,
    next() {
      stats.requests++;
      const due = retries[0];
      if (due && due.dueAt <= stats.requests) {
        retries.shift();
        stats.retries++;
        stats.events += due.request.events;
        return { ...due.request, repeat: true };
      }
      const key = o.keys[drawAccount()] ?? o.keys[0];
      if (!key) throw new Error('the tenant mix has no accounts');
      const events = drawSize();
      const parts: string[] = [];
      for (let i = 0; i < events; i++) parts.push(event(key));
      stats.eventsByIds[key.ids] += events;
      stats.events += events;
      const request = { body: `{"events":[${parts.join(',')}]}`, events, apiKey: key.apiKey };
      if (o.random() < o.retryShare) retries.push({ dueAt: stats.requests + RETRY_AFTER_REQUESTS, request });
      return request;
    },
    stats: () => ({ ...stats, eventsByIds: { ...stats.eventsByIds } }),
  };
}
