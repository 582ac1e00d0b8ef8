import { AppError, createMetricsRegistry } from '@ingest/platform';
import type { FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { accountAdmission, accountRateHook, type AccountRateLimiter, eventsIn } from './account-rate.limiter.js';

function requestOf(events: number): FastifyRequest {
  return {
    auth: { account: { id: 'acc_1', plan: 'pro' } },
    body: { events: Array.from({ length: events }, () => ({})) },
    routeOptions: { config: { countsEvents: true } },
    log: { debug: () => {} },
  } as unknown as FastifyRequest;
}

const redisAway: AccountRateLimiter = async () => {
  throw new Error('Connection is closed.');
};

describe('account rate hook', () => {
  it('counts the events of a `{ events: [...] }` body, capped at the largest /v1/events batch, and nothing else', () => {
    expect(eventsIn({ events: [1, 2, 3] })).toBe(3);
    expect(eventsIn({ events: Array.from({ length: 20_000 }) })).toBe(100);
    expect(eventsIn({ events: 'no' })).toBe(0);
    // A Segment /v1/batch counts its messages (docs/segment.md).
    expect(eventsIn({ batch: [1, 2], sentAt: 'x' })).toBe(2);
    expect(eventsIn({ batch: Array.from({ length: 500 }) })).toBe(100);
    expect(eventsIn(undefined)).toBe(0);
    expect(eventsIn(null)).toBe(0);
  });

  it('passes the events it counted to the limiter', async () => {
    const seen: number[] = [];
    const hook = accountRateHook(
      accountAdmission(
        async (_account, events) => {
          seen.push(events);
          return { allowed: true, items: [] };
        },
        { failOpen: true, metrics: createMetricsRegistry('test') },
      ),
    );
    await hook(requestOf(7));
    // A Segment single call (`countsEvents: 'one'`) is one event whatever its body holds.
    await hook({ ...requestOf(0), body: { userId: 'u' }, routeOptions: { config: { countsEvents: 'one' } } } as unknown as FastifyRequest);
    expect(seen).toEqual([7, 1]);
  });

  it('serves without the ceilings while Redis is away when failing open, and answers 503 (a retryable redis_unavailable) when failing closed', async () => {
    await expect(
      accountRateHook(accountAdmission(redisAway, { failOpen: true, metrics: createMetricsRegistry('test') }))(requestOf(1)),
    ).resolves.toBeUndefined();
    const closed = accountRateHook(accountAdmission(redisAway, { failOpen: false, metrics: createMetricsRegistry('test') }))(requestOf(1));
    await expect(closed).rejects.toBeInstanceOf(AppError);
    await expect(closed).rejects.toMatchObject({ code: 'redis_unavailable', retryable: true });
  });
});
