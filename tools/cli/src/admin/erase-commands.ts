import { ERASURE_IDENTIFIER_TYPES, type ErasureReapplyResult, type ErasureResult } from '@ingest/schemas';

/**
 * `erase <accountId> <type> <value>`: a client of POST /admin/v1/accounts/{id}/erasures
 * (docs/erasure.md). The type is any of the API's identifier types, so a new one (a `userId`)
 * needs no change here. A value of `-` is read from stdin: an email given on the command line
 * stays in the shell's history and is visible in `ps`, which an erasure should not leave behind.
 */
export type EraseCommand =
  | {
      kind: 'erase';
      accountId: string;
      type: string;
      /** `-` until runCli reads it from stdin. */
      value: string;
    }
  /** After a ClickHouse restore: the rows of every suppressed identity are deleted again. */
  | { kind: 'erasures reapply' };

export const ERASE_USAGE = `  erase <accountId> ${ERASURE_IDENTIFIER_TYPES.join('|')} <value|->
                                                           erase a person (email) or company (domain) from an
                                                           account: events, CRM sync state, and for good (the
                                                           suppression list); "-" reads the value from stdin
  erasures reapply                                         after restoring a ClickHouse backup: delete again the
                                                           events of every erased person and company`;

/** The route waits for the storage writer and for ClickHouse's mutation (ERASURE_WAIT_MS each). */
export const ERASE_TIMEOUT_MS = 150_000;

export function isEraseCommand(command: { kind: string }): command is EraseCommand {
  return command.kind === 'erase' || command.kind === 'erasures reapply';
}

export function parseEraseCommand(accountId: string | undefined, args: readonly string[], usageError: (message: string) => Error): EraseCommand {
  const [type, value] = args;
  if (!accountId || args.length !== 2 || !type || !value || value.trim() === '') {
    throw usageError(`"erase" takes <accountId> ${ERASURE_IDENTIFIER_TYPES.join('|')} <value|->`);
  }
  if (!(ERASURE_IDENTIFIER_TYPES as readonly string[]).includes(type)) throw usageError(`erase: the type is one of ${ERASURE_IDENTIFIER_TYPES.join(', ')}`);
  return { kind: 'erase', accountId, type, value };
}

export function eraseRequestFor(command: EraseCommand): { method: 'POST'; path: string; body?: unknown } {
  if (command.kind === 'erasures reapply') return { method: 'POST', path: '/admin/v1/erasures/reapply' };
  return {
    method: 'POST',
    path: `/admin/v1/accounts/${encodeURIComponent(command.accountId)}/erasures`,
    body: { type: command.type, value: command.value },
  };
}

export function formatEraseSuccess(command: EraseCommand, body: unknown): string {
  if (command.kind === 'erasures reapply') {
    const r = body as ErasureReapplyResult;
    return `${r.suppressions} suppressions on the list (${r.skipped} of unknown types skipped): ${r.events} events deleted again${r.complete ? '' : ' (the delete still runs in the background)'}\n`;
  }
  const r = body as ErasureResult;
  const lines = [
    `erased ${r.type} sha256:${r.identifierHash} from account ${r.accountId} (erasure ${r.id}, ${r.erasedAt})`,
    `  events deleted from ClickHouse: ${r.counts.events}`,
    `  CRM sync records deleted:       ${r.counts.crmRecords}`,
    `  pending CRM links deleted:      ${r.counts.pendingLinks}`,
    ...(r.counts.identityLinks !== undefined ? [`  identity map entries removed:  ${r.counts.identityLinks}`] : []),
    '  suppressed for good: not stored, synced or replayed again',
    r.complete
      ? '  complete: nothing of it is left in ClickHouse'
      : '  NOT complete: the writer or the delete did not finish in time; run the same command again later',
  ];
  return `${lines.join('\n')}\n`;
}
