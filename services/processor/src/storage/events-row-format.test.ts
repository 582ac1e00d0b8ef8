import { describe, expect, it } from 'vitest';
import type { ClickHouse } from '@ingest/platform';
import { createLogger } from '@ingest/platform';
import { EVENT_RECORD_VERSION, type EventRecord } from '@ingest/schemas';
import { toCurrentEventLine, toEventLine, toEventLineBeforePersonIds } from '@ingest/domain';
import { createEventsRowFormatHolder } from './events-row-format.js';

const record: EventRecord = {
  v: EVENT_RECORD_VERSION,
  accountId: 'acc_1',
  eventId: 'e1',
  eventName: 'Signed Up',
  email: null,
  domain: null,
  timestampMs: 1_767_225_600_123,
  receivedAtMs: 1_767_225_601_456,
  properties: {},
  source: 'api',
  jobId: null,
};

/** A ClickHouse whose events table has `eventTime`'s type (and user_id unless `personIds` says no), or that is down (undefined). */
function server(eventTime: () => string | undefined, personIds: () => boolean = () => true): ClickHouse {
  return {
    query: () => {
      const type = eventTime();
      const userId = personIds() ? [{ name: 'user_id', type: 'String' }] : [];
      return type === undefined ? Promise.reject(new Error('connect ECONNREFUSED')) : Promise.resolve([{ name: 'event_time', type }, ...userId]);
    },
  } as unknown as ClickHouse;
}

describe('the events row format holder', () => {
  const logger = createLogger({ service: 'test', level: 'silent' });

  it('writes legacy lines until the table has the current shape, then current ones', async () => {
    let type = "DateTime('UTC')";
    const holder = createEventsRowFormatHolder(
      server(() => type),
      logger,
    );
    expect(await holder.refresh()).toBe('legacy');
    expect(holder.line(record, 0)).toBe(toEventLine(record, 0));
    type = "DateTime64(3, 'UTC')";
    expect(await holder.refresh()).toBe('current');
    expect(holder.line(record, 0)).toBe(toCurrentEventLine(record, 0));
  });

  it('writes no person columns into a legacy table that migration 0007 has not reached, and writes them once it has', async () => {
    let migrated = false;
    const holder = createEventsRowFormatHolder(
      server(
        () => "DateTime('UTC')",
        () => migrated,
      ),
      logger,
    );
    expect(await holder.refresh()).toBe('legacy');
    const segment = { ...record, userId: 'u1', anonymousId: 'a1', context: { library: { name: 'x' } } };
    expect(holder.line(segment, 0)).toBe(toEventLineBeforePersonIds(segment, 0));
    expect(holder.line(segment, 0).split('\t')).toHaveLength(13);
    migrated = true;
    expect(await holder.refresh()).toBe('legacy');
    expect(holder.line(segment, 0)).toBe(toEventLine(segment, 0));
    expect(holder.line(segment, 0).split('\t')).toHaveLength(16);
  });

  it('keeps the shape it knows when ClickHouse cannot be asked (start does not fail)', async () => {
    let type: string | undefined = "DateTime64(3, 'UTC')";
    const holder = createEventsRowFormatHolder(
      server(() => type),
      logger,
    );
    await holder.refresh();
    type = undefined;
    await expect(holder.refresh()).resolves.toBe('current');
    expect(holder.shape).toBe('current');
  });
});
