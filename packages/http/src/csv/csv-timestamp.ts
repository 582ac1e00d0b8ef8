import { DateTime, IANAZone } from 'luxon';
import { ProblemError } from '../http/problem.js';

/**
 * The timestamp cells of a CSV as people export them, turned into the ISO 8601 instants the
 * event rules take (validate-event.ts stays the judge of the result):
 * - ISO 8601 with a zone (`2026-01-01T00:00:00Z`, `2026-01-01 00:00:00+01:00`): kept as written.
 * - Epoch seconds, 9 or 10 digits with an optional fraction (`1767225600`, `1767225600.25`),
 *   and epoch milliseconds, 12 or 13 digits (`1767225600000`): 1973 to 2286 either way. An
 *   11-digit number is left alone (seconds past the year 2286 or milliseconds before 1976:
 *   neither is a plausible event time), as are shorter numbers (a year such as `2026`).
 * - A time without a zone (`2026-01-01 00:00:00`, what ClickHouse and many warehouses export):
 *   read in the upload's `timezone` form field (an IANA zone, e.g. `Europe/Berlin`, or `UTC`).
 *   Without that field it is the row's `invalid_format` error with a hint, never a guess: the
 *   server's zone is nobody's. A local time that a daylight-saving change skips (02:30 on a
 *   spring-forward night) is moved forward by the gap, and one that happens twice (02:30 on
 *   the night clocks go back) is the later instant, in standard time (Luxon's rules).
 * Zones come from Luxon over the runtime's Intl (ICU) time-zone data.
 */
const EPOCH_SECONDS = /^(\d{9,10})(?:\.(\d{1,9}))?$/;
const EPOCH_MILLISECONDS = /^\d{12,13}$/;
const ZONELESS = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?$/;

export type TimestampCell = { ok: true; value: string } | { ok: false; code: 'invalid_format'; message: string };

export const ZONELESS_HINT =
  'must be an ISO 8601 date-time with a zone, e.g. "2026-11-21T14:03:07.123Z"; this one has no zone: add Z or an offset such as +01:00, or send the form field timezone (e.g. timezone=Europe/Berlin, before the file part) to read zone-less times in that zone';

/** The `timezone` form field: an IANA zone name (`Europe/Berlin`, `UTC`); anything else is a 400 naming the field. */
export function timezoneFromField(value: string): string {
  const zone = value.trim();
  if (zone !== '' && zone.length <= 64 && IANAZone.isValidZone(zone)) return zone;
  throw new ProblemError('validation', 'The timezone form field must be an IANA time zone such as Europe/Berlin or UTC.', {
    errors: [{ field: 'timezone', code: 'invalid_value', message: 'must be an IANA time zone such as Europe/Berlin or UTC' }],
  });
}

/** Reads one timestamp cell; `timezone` is the upload's form field, if it sent one. */
export function createTimestampReader(timezone: string | undefined): (cell: string) => TimestampCell {
  return (cell) => {
    const text = cell.trim();
    const seconds = EPOCH_SECONDS.exec(text);
    if (seconds) return instant(Number(seconds[1]) * 1000 + Number((seconds[2] ?? '').padEnd(3, '0').slice(0, 3)));
    if (EPOCH_MILLISECONDS.test(text)) return instant(Number(text));
    const local = ZONELESS.exec(text);
    if (!local) return { ok: true, value: cell };
    if (timezone === undefined) return { ok: false, code: 'invalid_format', message: ZONELESS_HINT };
    const [, year, month, day, hour, minute, second = '0', fraction = ''] = local;
    const time = DateTime.fromObject(
      {
        year: Number(year),
        month: Number(month),
        day: Number(day),
        hour: Number(hour),
        minute: Number(minute),
        second: Number(second),
        millisecond: Number(fraction.padEnd(3, '0').slice(0, 3)),
      },
      { zone: timezone },
    );
    if (!time.isValid) return { ok: false, code: 'invalid_format', message: 'is not a real calendar date and time' };
    return instant(time.toMillis());
  };
}

function instant(ms: number): TimestampCell {
  return { ok: true, value: new Date(ms).toISOString() };
}
