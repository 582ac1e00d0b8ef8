import { type DeadLetterEntry, entryPosition } from '@ingest/platform';
import { table } from '../frame.js';

/**
 * Output of the dead-letter CLI. Keys and values are event contents (a key can hold an email
 * address), so by default they appear only as sizes. Header text comes from whoever wrote the
 * letter, so control characters are escaped before anything reaches the terminal.
 */
const REASON_WIDTH = 160;

export interface ListOutput {
  topic: string;
  entries: DeadLetterEntry[];
  /** More matching entries exist beyond the ones shown. */
  truncated: boolean;
  code?: string;
  showValues: boolean;
}

export function formatList({ topic, entries, truncated, code, showValues }: ListOutput): string {
  if (entries.length === 0) return `no dead letters${code ? ` with code ${printable(code)}` : ''} in ${printable(topic)}\n`;
  const rows = [
    ['POSITION', 'FAILED AT', 'CODE', 'SOURCE', 'CONSUMER', 'KEY', 'VALUE', 'REASON'],
    ...entries.map((e) => [
      entryPosition(e),
      printable(e.failedAt),
      printable(e.code),
      `${printable(e.sourceTopic)}/${e.sourcePartition ?? '?'}/${printable(e.sourceOffset)}`,
      printable(e.consumer),
      e.key === null ? '-' : bytes(e.key.length),
      bytes(e.valueBytes),
      truncate(printable(e.reason) + (e.replayedFrom ? ` (replay of ${printable(e.replayedFrom)})` : ''), REASON_WIDTH),
    ]),
  ];
  const lines = table(rows).split('\n');
  const out: string[] = [lines[0] ?? ''];
  entries.forEach((e, i) => {
    out.push(lines[i + 1] ?? '');
    if (showValues) {
      out.push(`    key:   ${e.key === null ? 'null' : JSON.stringify(e.key.toString('utf8'))}`);
      out.push(`    value: ${e.value === null ? 'null' : JSON.stringify(e.value.toString('utf8'))}`);
    }
  });
  const scope = `${entries.length} dead letter${entries.length === 1 ? '' : 's'}${code ? ` with code ${printable(code)}` : ''} in ${printable(topic)}`;
  out.push('', truncated ? `showing the oldest ${scope}; more exist (raise --limit or filter with --code)` : scope);
  if (!showValues) out.push('keys and values are shown as sizes; --show-values prints them');
  return `${out.join('\n')}\n`;
}

/** --json: the same fields, with key and value as UTF-8 text only under --show-values. */
export function listJson({ topic, entries, truncated, showValues }: ListOutput): string {
  const body = {
    topic,
    truncated,
    entries: entries.map((e) => ({
      position: entryPosition(e),
      partition: e.partition,
      offset: e.offset,
      code: e.code,
      reason: e.reason,
      sourceTopic: e.sourceTopic,
      sourcePartition: e.sourcePartition,
      sourceOffset: e.sourceOffset,
      failedAt: e.failedAt,
      consumer: e.consumer,
      replayedFrom: e.replayedFrom,
      keyBytes: e.key?.length ?? null,
      valueBytes: e.valueBytes,
      ...(showValues ? { key: e.key?.toString('utf8') ?? null, value: e.value?.toString('utf8') ?? null } : {}),
    })),
  };
  return `${JSON.stringify(body, null, 2)}\n`;
}

export function formatReplayPlan(entries: readonly DeadLetterEntry[], verb: 'replayed' | 'would replay'): string {
  const lines = [`${verb} ${entries.length} dead letter${entries.length === 1 ? '' : 's'}:`];
  for (const e of entries) {
    lines.push(`  ${entryPosition(e)} -> ${printable(e.sourceTopic)} (${printable(e.code)}, failed ${printable(e.failedAt)}, value ${bytes(e.valueBytes)})`);
  }
  return `${lines.join('\n')}\n`;
}

export function replayJson(entries: readonly DeadLetterEntry[], replayed: boolean): string {
  const body = { replayed, entries: entries.map((e) => ({ position: entryPosition(e), code: e.code, sourceTopic: e.sourceTopic })) };
  return `${JSON.stringify(body, null, 2)}\n`;
}

/** Control characters (and DEL, C1) as escapes: header text must not drive the terminal. */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

export function bytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 / 1024).toFixed(1)} MiB`;
}

function truncate(text: string, width: number): string {
  return text.length <= width ? text : `${text.slice(0, width - 1)}…`;
}
