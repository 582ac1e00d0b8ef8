import { describe, expect, it } from 'vitest';
import { runIngest } from '../ingest.js';
import { describeUpgrade } from './cli.js';

function io() {
  const out = { stdout: '', stderr: '' };
  return { out, io: { env: {}, stdout: (t: string) => void (out.stdout += t), stderr: (t: string) => void (out.stderr += t) } };
}

describe('ingest clickhouse', () => {
  it('shows its usage for help and refuses an unknown action (exit 2)', async () => {
    const help = io();
    expect(await runIngest(['clickhouse', 'help'], help.io)).toBe(0);
    expect(help.out.stdout).toContain('usage: ingest clickhouse upgrade-events');
    const wrong = io();
    expect(await runIngest(['clickhouse', 'drop-everything'], wrong.io)).toBe(2);
    expect(wrong.out.stderr).toContain('unknown clickhouse command: drop-everything');
  });

  it('says in one line what the upgrade did, or why it did nothing', () => {
    expect(describeUpgrade({ status: 'not-for-this-server', serverVersion: '18.16.1', needs: '24.8' })).toBe(
      'nothing to upgrade: the current events shape needs ClickHouse >= 24.8; this server (18.16.1) keeps the 18.16-compatible shape',
    );
    expect(describeUpgrade({ status: 'already-current', serverVersion: '25.8.1.1' })).toContain('already has the current shape');
    expect(describeUpgrade({ status: 'upgraded', serverVersion: '25.8.1.1', partitions: 3, rows: 120, switchedAtMs: 0 })).toBe(
      'events upgraded to the current shape: 3 partitions copied, switched at 1970-01-01T00:00:00.000Z; the legacy table is kept as events_before_upgrade (120 rows): drop it once you have checked',
    );
  });
});
