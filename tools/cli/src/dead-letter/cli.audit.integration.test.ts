/**
 * Real servers: Kafka, ClickHouse, Redis; the real gateway app's admin API and the real processor
 * (its audit copy into ClickHouse) in this process. A dead-letter replay made with the CLI is
 * audited like a dashboard replay (`dead_letter.replay`): one record per account, naming the
 * operator, the host, what was replayed by ids only, and read back through the admin API's audit
 * log. A dry run (no --yes) changes nothing and records nothing. No event contents in any record.
 */
import { hostname } from 'node:os';
import type { AuditPage, AuditRecord } from '@ingest/schemas';
import { type Component, createDeadLetterSink } from '@ingest/platform';
import { integrationEnv, uniqueSuffix, waitFor } from '@ingest/testkit';
import { ADMIN_TOKEN, type GatewayFixture, useGatewayFixture } from '@ingest/testkit/gateway';
import { startProcessorFor } from '@ingest/testkit/processor';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './cli.js';

const gw: GatewayFixture = useGatewayFixture();
let processor: Component[] = [];
beforeAll(async () => {
  processor = await startProcessorFor(gw, 'deadletters-audit');
});
afterAll(async () => {
  for (const part of processor.reverse()) await part.stop();
});

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const env = { KAFKA_BROKERS: integrationEnv().kafkaBrokers, KAFKA_TOPIC_PREFIX: gw.kafka.prefix, INGEST_OPERATOR: 'ops-grace' };
  const result = { code: 0, stdout: '', stderr: '' };
  result.code = await runCli(args, { env, stdout: (t) => void (result.stdout += t), stderr: (t) => void (result.stderr += t) });
  return result;
}

async function auditPage(query: string): Promise<AuditRecord[]> {
  const response = await gw.admin.inject({ method: 'GET', url: `/admin/v1/audit?${query}`, headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
  expect(response.statusCode, response.body).toBe(200);
  return response.json<AuditPage>().records;
}

describe('deadletters replay: the audit log', () => {
  it('records a CLI replay per account with the operator, host and ids, readable through the admin API, without event contents', async () => {
    const code = `crm_audit_${uniqueSuffix()}`;
    const [a, b] = [`acc_a${uniqueSuffix()}`, `acc_b${uniqueSuffix()}`];
    // What must never reach the audit log: the events' contents.
    const contents = ['private-person@example.com', 'secret-plan-name', 'pat-na1-LEAKED-TOKEN'];
    const letter = (accountId: string, eventId: string, offset: number) => ({
      message: {
        topic: gw.kafka.topic('eventsUnique'),
        partition: 0,
        offset: String(offset),
        key: Buffer.from(`${accountId}:${contents[0]}`),
        value: Buffer.from(JSON.stringify({ v: 1, accountId, eventId, email: contents[0], properties: { plan: contents[1], token: contents[2] } })),
        headers: {},
        timestamp: Date.now(),
      },
      code,
      reason: `account ${accountId} event ${eventId}: refused`,
    });
    await createDeadLetterSink(gw.producer, gw.kafka.topic('crmDeadLetters'), 'crm-sink').publish([
      letter(a, 'evt-a1', 1),
      letter(a, 'evt-a2', 2),
      letter(b, 'evt-b1', 3),
    ]);

    const dry = await cli(['replay', '--crm', '--code', code]);
    expect(dry.code, dry.stderr).toBe(2);
    const replayed = await cli(['replay', '--crm', '--code', code, '--yes']);
    expect(replayed.code, replayed.stderr).toBe(0);
    const requestId = /request ([0-9a-f-]{36})/.exec(replayed.stderr)?.[1];
    expect(requestId, replayed.stderr).toBeDefined();

    // ClickHouse, through the admin API; the dry run wrote nothing.
    const records = await waitFor(
      async () => {
        const found = (await auditPage('action=dead_letter.replay&actor=ops-grace&limit=500')).filter((r) => JSON.stringify(r.after).includes(code));
        return found.length >= 2 ? found : undefined;
      },
      { description: 'the replay audit records in ClickHouse, read through the admin API', timeoutMs: 30_000 },
    );
    expect(records).toHaveLength(2);
    const of = (accountId: string) => records.find((r) => r.accountId === accountId);
    for (const record of records) {
      expect(record).toMatchObject({
        action: 'dead_letter.replay',
        actor: { type: 'admin', name: 'ops-grace', role: 'cli' },
        ip: hostname().slice(0, 64),
        requestId,
      });
    }
    expect(of(a)).toMatchObject({
      target: 'crm.deadletter',
      after: { to: 'crm.replay', count: 2, filter: { code }, codes: [code], eventIds: ['evt-a1', 'evt-a2'] },
    });
    expect((of(a)?.after as { positions?: unknown[] } | null | undefined)?.positions).toHaveLength(2);
    expect(of(b)).toMatchObject({ after: { to: 'crm.replay', count: 1, filter: { code }, eventIds: ['evt-b1'] } });
    expect(of(b)?.target).toMatch(/^crm\.deadletter\/\d+\/\d+$/);
    // The account filter finds an account's own replay.
    expect((await auditPage(`accountId=${b}&action=dead_letter.replay`)).map((r) => r.requestId)).toEqual([requestId]);

    const text = JSON.stringify(records);
    for (const secret of [...contents, ADMIN_TOKEN]) expect(text.includes(secret), `"${secret}" is in the audit log: ${text}`).toBe(false);
  });
});
