import { describe, expect, it } from 'vitest';
import { type ClickHouse, createLogger } from '@ingest/platform';
import { currentEventsDdl, upgradeEvents } from './events-upgrade.js';

/**
 * The upgrade's decisions against a scripted server (what each query answers; commands recorded).
 * The statements themselves run on the current engines (events-upgrade.chdb.test.ts in the processor).
 */
function scripted(answers: { version: string; eventTimeType?: string; engine?: string; rows?: string; running?: string[][]; partitions?: string[] }) {
  const commands: string[] = [];
  const running = [...(answers.running ?? [[]])];
  const ch = {
    command: (q: string) => {
      commands.push(q);
      return Promise.resolve();
    },
    insert: () => Promise.resolve(),
    query: (q: string) => {
      if (q.startsWith('SELECT version()')) return Promise.resolve([{ version: answers.version }]);
      if (q.includes('FROM system.columns')) return Promise.resolve([{ name: 'event_time', type: answers.eventTimeType ?? "DateTime('UTC')" }]);
      if (q.includes('FROM system.databases')) return Promise.resolve([{ engine: answers.engine ?? 'Atomic' }]);
      if (q.includes('FROM system.processes'))
        return Promise.resolve((running.length > 1 ? running.shift() : running[0])?.map((query_id) => ({ query_id })) ?? []);
      if (q.includes('FROM system.parts')) return Promise.resolve((answers.partitions ?? []).map((partition_id) => ({ partition_id })));
      if (q.includes('count()')) return Promise.resolve([{ rows: answers.rows ?? '0' }]);
      return Promise.reject(new Error(`unscripted query: ${q}`));
    },
  } as unknown as ClickHouse;
  return { ch, commands };
}

const logger = createLogger({ service: 'test', level: 'silent' });
const noSleep = () => Promise.resolve();

describe('upgradeEvents', () => {
  it('does nothing on servers older than 24.8 and says which version it needs', async () => {
    const server = scripted({ version: '18.16.1' });
    expect(await upgradeEvents(server.ch, { logger })).toEqual({ status: 'not-for-this-server', serverVersion: '18.16.1', needs: '24.8' });
    expect(server.commands).toEqual([]);
  });

  it('leaves a table with rows to the command when run by setup (onlyIfEmpty)', async () => {
    const server = scripted({ version: '25.8.1.1', rows: '12' });
    expect(await upgradeEvents(server.ch, { logger, onlyIfEmpty: true })).toEqual({ status: 'left-for-the-command', serverVersion: '25.8.1.1', rows: 12 });
    expect(server.commands).toEqual([]);
  });

  it('stops before changing anything in a database that is not Atomic (no EXCHANGE TABLES there)', async () => {
    const server = scripted({ version: '24.8.4.1', engine: 'Ordinary' });
    await expect(upgradeEvents(server.ch, { logger })).rejects.toThrow('the events upgrade needs an Atomic database (EXCHANGE TABLES); this one is Ordinary');
    expect(server.commands).toEqual([]);
  });

  it('waits for the inserts running when the bridge appeared before it copies', async () => {
    const server = scripted({ version: '24.8.4.1', running: [['q1', 'q2'], ['q2'], []], partitions: ['202611'] });
    const order: string[] = [];
    let sleeps = 0;
    await upgradeEvents(server.ch, {
      logger,
      sleep: () => {
        sleeps++;
        return Promise.resolve();
      },
      afterStep: (step) => {
        order.push(step);
        return Promise.resolve();
      },
    });
    expect(sleeps).toBe(2);
    expect(order).toEqual(['created', 'bridged', 'inserts-settled', 'copied:202611', 'switched']);
    expect(server.commands.findIndex((c) => c.startsWith('EXCHANGE TABLES events AND events_next'))).toBeGreaterThan(
      server.commands.findIndex((c) => c.includes("WHERE _partition_id = '202611'")),
    );
    // The bridge goes after the switch, never before (no insert between the two escapes both tables).
    expect(server.commands.indexOf('DROP VIEW IF EXISTS events_upgrade_bridge', 2)).toBeGreaterThan(server.commands.findIndex((c) => c.startsWith('EXCHANGE')));
  });

  it('gives up (and changes nothing more) when an insert is still running after the wait', async () => {
    let now = 0;
    const server = scripted({ version: '24.8.4.1', running: [['stuck']] });
    await expect(
      upgradeEvents(server.ch, {
        logger,
        insertsWaitMs: 1_000,
        now: () => (now += 300),
        sleep: noSleep,
      }),
    ).rejects.toThrow('inserts still running after the bridge appeared: stuck; run the upgrade again');
    expect(server.commands.some((c) => c.startsWith('EXCHANGE') || c.startsWith('INSERT'))).toBe(false);
  });

  it('adds properties_json to the current table on 25.8 and later only', () => {
    expect(currentEventsDdl('t', true)).toContain("properties_json JSON MATERIALIZED accurateCastOrDefault(properties, 'JSON')");
    expect(currentEventsDdl('t', false)).not.toContain('properties_json');
  });
});
