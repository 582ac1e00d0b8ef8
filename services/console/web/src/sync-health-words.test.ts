import { describe, expect, it } from 'vitest';
import { stateWords } from './sync-health-words.js';

const at = '2026-11-27T10:00:00.000Z';
const current = (state: 'running' | 'failing' | 'parked' | 'credential_broken') => ({
  state,
  reason: null,
  since: at,
  unhealthySince: null,
  updatedAt: at,
  lastSuccessAt: null,
  lastFailureAt: null,
});

describe('stateWords', () => {
  it('says each state in plain words with a tone', () => {
    expect(stateWords(null)).toMatchObject({ headline: 'Nothing synced yet', tone: 'ok' });
    expect(stateWords(current('running'))).toMatchObject({ headline: 'Syncing normally', tone: 'ok' });
    expect(stateWords(current('failing'))).toMatchObject({ headline: 'Sync is failing', tone: 'danger' });
    expect(stateWords(current('parked'))).toMatchObject({ headline: 'Sync is paused', tone: 'warn' });
    expect(stateWords(current('credential_broken'))).toMatchObject({ headline: 'CRM connection broken', tone: 'danger' });
  });
});
