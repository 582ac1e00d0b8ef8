import { createHash } from 'node:crypto';
import type { CsvHeader } from './csv-header.js';

/** A CSV row in the shape of an API event; validated later by the job, like any event. */
export interface CsvEvent {
  eventName: string;
  timestamp: string;
  email?: string;
  domain?: string;
  eventId: string;
  properties: Record<string, string>;
}

/**
 * Builds events from the rows of one file. Cells are kept exactly as written (no trimming, no
 * type guessing, no "sanitising" of spreadsheet formulas such as `=HYPERLINK(...)`: they are
 * data, and escaping them is the job of whoever exports them to a spreadsheet again).
 */
export class CsvEventMapper {
  /** How often each row content has been seen, keyed by its hash (not the content: memory). */
  private readonly seen = new Map<string, number>();

  constructor(
    private readonly header: CsvHeader,
    private readonly accountId: string,
  ) {}

  /** `cells` must have one cell per header column. */
  toEvent(cells: readonly string[]): CsvEvent {
    const { header } = this;
    const cell = (at: number) => (at < 0 ? '' : (cells[at] ?? ''));
    // Decision: an empty cell is "no value", so it is left out of the properties rather than
    // sent as '' (the spec allows empty cells; a property of '' would overwrite CRM data).
    // Null prototype: a column named `__proto__` must stay a key for the job to refuse, not
    // silently vanish into the object's prototype.
    const properties: Record<string, string> = Object.create(null);
    for (const [at, name] of header.properties) {
      const value = cell(at);
      if (value !== '') properties[name] = value;
    }
    const email = cell(header.email);
    const domain = cell(header.domain);
    return {
      eventName: cell(header.eventName),
      timestamp: cell(header.timestamp),
      ...(email !== '' ? { email } : {}),
      ...(domain !== '' ? { domain } : {}),
      eventId: cell(header.eventId) || this.derivedId(cells),
      properties,
    };
  }

  /**
   * Without an event_id the id is derived from the row, so uploading the same file again
   * produces the same ids and the (account, eventId) dedupe drops the repeats:
   * 'csv_' + first 32 hex chars of sha256(accountId \n JSON(cells in header order) \n occurrence),
   * where `occurrence` counts earlier identical rows of this file, so two identical rows stay
   * two events.
   */
  private derivedId(cells: readonly string[]): string {
    const hash = createHash('sha256').update(this.accountId).update('\n').update(JSON.stringify(cells));
    const key = hash.copy().digest('base64');
    const occurrence = this.seen.get(key) ?? 0;
    this.seen.set(key, occurrence + 1);
    return `csv_${hash.update(`\n${occurrence}`).digest('hex').slice(0, 32)}`;
  }
}
