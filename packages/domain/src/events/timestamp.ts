/**
 * ISO 8601 date-times with an explicit zone (`Z` or `±hh:mm`), seconds and fraction optional.
 * Date.parse alone is too lenient: it rolls 2024-02-30 over to March and guesses the zone of
 * zoneless strings, so the calendar fields are checked after parsing.
 */
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?([Zz]|[+-]\d{2}:?\d{2})$/;

export type ParsedTimestamp = { ok: true; ms: number } | { ok: false; message: string };

export function parseTimestamp(input: string): ParsedTimestamp {
  const m = ISO_DATE_TIME.exec(input.trim());
  if (!m) return { ok: false, message: 'must be an ISO 8601 date-time with a zone, e.g. "2026-11-21T14:03:07.123Z"' };
  const [, y, mo, d, h, mi, s = '00', frac = '', zone = 'Z'] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const hour = Number(h);
  const minute = Number(mi);
  const second = Number(s);
  const localMs = Date.UTC(year, month - 1, day, hour, minute, second, Number(frac.padEnd(3, '0').slice(0, 3)));
  const check = new Date(localMs);
  if (check.getUTCFullYear() !== year || check.getUTCMonth() !== month - 1 || check.getUTCDate() !== day || hour > 23 || minute > 59 || second > 59) {
    return { ok: false, message: 'is not a real calendar date and time' };
  }
  let offsetMinutes = 0;
  if (zone.toUpperCase() !== 'Z') {
    const digits = zone.replace(':', '');
    const zh = Number(digits.slice(1, 3));
    const zm = Number(digits.slice(3, 5));
    if (zh > 23 || zm > 59) return { ok: false, message: 'has an invalid zone offset' };
    offsetMinutes = (digits.startsWith('-') ? -1 : 1) * (zh * 60 + zm);
  }
  return { ok: true, ms: localMs - offsetMinutes * 60_000 };
}
