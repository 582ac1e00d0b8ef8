import type { DashboardSyncHealth } from './types.js';

type Current = NonNullable<DashboardSyncHealth['current']>;

/** The headline of each state, in words an owner can act on, and the banner's tone. */
export function stateWords(current: Current | null): { headline: string; advice: string; tone: 'ok' | 'warn' | 'danger' } {
  if (!current)
    return {
      headline: 'Nothing synced yet',
      advice: 'Once events that your CRM mapping acts on arrive, their sync shows here.',
      tone: 'ok',
    };
  switch (current.state) {
    case 'running':
      return { headline: 'Syncing normally', advice: 'Events reach your CRM as they arrive.', tone: 'ok' };
    case 'failing':
      return {
        headline: 'Sync is failing',
        advice: 'Your CRM refuses the events. They are kept as dead letters: fix the cause (often the mapping), then replay them.',
        tone: 'danger',
      };
    case 'parked':
      return {
        headline: 'Sync is paused',
        advice: 'Your CRM cannot take events right now. They are kept and sent in order once it can; nothing is lost meanwhile.',
        tone: 'warn',
      };
    case 'credential_broken':
      return {
        headline: 'CRM connection broken',
        advice: 'Your CRM no longer accepts the stored credential. Connect it again; the failed events can then be replayed.',
        tone: 'danger',
      };
  }
}
