import { createHash } from 'node:crypto';
import type { CsvHeader } from './csv-header.js';
import { createTimestampReader } from './csv-timestamp.js';

/** A CSV row in the shape of an API event; validated later by the job, like any event. */
export interface CsvEvent {
  eventName: string;
  timestamp: string;
  email?: string;
  domain?: string;
  eventId: string;
  properties: Record<string, string>;
}

/** A row as a job item's payload: the event, or why the row cannot be one. */
export type CsvRowResult = { event: CsvEvent } | { event: null; error: { code: string; message: string; column: string } };

/**
 * Builds events from the rows of one file. Cells are kept exactly as written (no trimming, no
 * type guessing, no "sanitising" of spreadsheet formulas such as `=HYPERLINK(...)`: they are
 * data, and escaping them is the job of whoever exports them to a spreadsheet again).
 */
export class CsvEventMapper {
  /** How often each row content has been seen, keyed by its hash (not the content: memory). */
  private readonly seen = new Map<string, number>();
  private readonly readTimestamp: ReturnType<typeof createTimestampReader>;

  /** `timezone`: the upload's form field, for times written without a zone (csv-timestamp.ts). */
  constructor(
    private readonly header: CsvHeader,
    private readonly accountId: string,
    private readonly timezone?: string,
  ) {
    this.readTimestamp = createTimestampReader(timezone);
  }

  /** `cells` must have one cell per header column. */
  toItem(cells: readonly string[]): CsvRowResult {
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
    // The id first: a row rejected here still counts as an occurrence of its content.
    const eventId = cell(header.eventId) || this.derivedId(cells);
    const timestamp = this.readTimestamp(cell(header.timestamp));
    if (!timestamp.ok) return { event: null, error: { code: timestamp.code, message: timestamp.message, column: 'timestamp' } };
    return {
      event: {
        eventName: cell(header.eventName),
        timestamp: timestamp.value,
        ...(email !== '' ? { email } : {}),
        ...(domain !== '' ? { domain } : {}),
        eventId,
        properties,
      },
    };
  }

  /**
   * Without an event_id the id is derived from the row, so uploading the same file again
   * produces the same ids and the (account, eventId) dedupe drops the repeats:
   * 'csv_' + first 32 hex chars of sha256(accountId \n JSON(cells in header order) \n occurrence),
   * where `occurrence` counts earlier identical rows of this file, so two identical rows stay
   * two events. With a `timezone` form field, `\ntz:<zone>` follows the account id: the same
   * zone-less row read in another zone is another instant, so a corrected re-upload is not
   * dropped as a repeat of the wrong one (files without the field keep their ids).
   */
  private derivedId(cells: readonly string[]): string {
    const hash = createHash('sha256').update(this.accountId);
    if (this.timezone !== undefined) hash.update(`\ntz:${this.timezone}`);
    hash.update('\n').update(JSON.stringify(cells));
    const key = hash.copy().digest('base64');
    const occurrence = this.seen.get(key) ?? 0;
    this.seen.set(key, occurrence + 1);
    return `csv_${hash.update(`\n${occurrence}`).digest('hex').slice(0, 32)}`;
  }
}
