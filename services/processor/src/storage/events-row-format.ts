import type { EventRecord } from '@ingest/schemas';
import type { ClickHouse, Logger } from '@ingest/platform';
import { EVENTS_ROW_FORMATS, type EventsShape, readEventsRowFormat } from '@ingest/domain';

/**
 * The row format the storage writer uses for `events`: the shape the table has (legacy on 18.16
 * and before the upgrade, current after it; docs/clickhouse.md). Looked up at start and again
 * whenever ClickHouse refuses an insert, so a writer that was sending legacy lines when
 * `ingest clickhouse upgrade-events` switched the table fails that insert (nothing is stored, its
 * offsets stay uncommitted), finds the current shape and re-reads the events in it. A legacy table
 * that migration 0007 has not reached yet gets lines without the person columns (only when this
 * processor started before setup, against the deploy order); it learns of the columns at its next
 * start or refused insert.
 */
export interface EventsRowFormatHolder {
  readonly shape: EventsShape;
  line(record: EventRecord, insertedAtMs: number): string;
  /** Looks at the table again; a failed look keeps the shape it had (the next refusal tries again). */
  refresh(): Promise<EventsShape>;
}

export function createEventsRowFormatHolder(ch: ClickHouse, logger: Logger, initial: EventsShape = 'legacy'): EventsRowFormatHolder {
  let format = EVENTS_ROW_FORMATS[initial];
  const log = logger.child({ component: 'events-row-format' });
  return {
    get shape() {
      return format.shape;
    },
    line: (record, insertedAtMs) => format.line(record, insertedAtMs),
    async refresh() {
      try {
        const next = await readEventsRowFormat(ch);
        if (next !== format) {
          log.info({ from: format.shape, to: next.shape, columns: next.columns.length }, 'events table shape changed: writing rows in the new shape');
        }
        format = next;
      } catch (err) {
        log.warn({ err: (err as Error).message, shape: format.shape }, 'could not read the events table shape; keeping the one known');
      }
      return format.shape;
    },
  };
}
