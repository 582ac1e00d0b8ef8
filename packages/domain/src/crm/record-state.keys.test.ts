import { describe, expect, it } from 'vitest';
import { ledgerKey } from './mapping.plan.js';
import { recordStateKeys } from './record-state.reader.js';

/** The hash tag Redis Cluster hashes: the text between the first `{` and the next `}`. */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  const close = key.indexOf('}', open + 1);
  return open >= 0 && close > open + 1 ? key.slice(open + 1, close) : key;
}

describe('record state keys', () => {
  const keys = recordStateKeys('p.');
  const account = 'acc_1:{x}';
  const ledger = ledgerKey(account, 'ev:1}', 'rule-a');

  it('give the state hash, the ledger and the activity mark of one account the same hash tag, so one script may touch them', () => {
    const tags = [keys.state(account, 'contact', 'ada@example.com'), keys.ledger(ledger), keys.activity(ledger)].map(hashTag);
    expect(tags).toEqual([encodeURIComponent(account), encodeURIComponent(account), encodeURIComponent(account)]);
  });

  it('keep ledger keys of different events, rules and accounts apart', () => {
    const all = [ledger, ledgerKey(account, 'ev:2}', 'rule-a'), ledgerKey(account, 'ev:1}', 'rule-b'), ledgerKey('acc_2', 'ev:1}', 'rule-a')];
    expect(new Set(all.map((k) => keys.ledger(k))).size).toBe(4);
    expect(keys.activity(ledger)).toBe(`${keys.ledger(ledger)}:activity`);
  });
});
