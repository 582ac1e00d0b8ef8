import { describe, expect, it } from 'vitest';
import { auditQuery, decodeAuditCursor, decodeAuditRecord, encodeAuditCursor, fromAuditRow, toAuditRow, withoutSecrets } from './audit-record.js';
import { toAuditRecord } from './audit.store.js';

describe('audit records', () => {
  it('drop every field named like a secret, at any depth, and bound what they keep', () => {
    const cleaned = withoutSecrets({
      name: 'k',
      apiKey: 'svc_live_x',
      hash: 'abc',
      nested: { accessToken: 'pat-1', secret: 's', previousSecret: 'p', password: 'pw', passwordHash: 'h', url: 'https://x' },
      list: [{ token: 't' }],
      long: 'x'.repeat(5_000),
    }) as Record<string, unknown>;
    expect(JSON.stringify(cleaned)).not.toMatch(/svc_live_x|abc|pat-1|"s"|"p"|"pw"|"h"|"t"/);
    expect(cleaned).toMatchObject({ name: 'k', nested: { url: 'https://x' } });
    expect((cleaned.long as string).length).toBeLessThanOrEqual(2_001);
  });

  it('round-trip through the ClickHouse row and the Kafka value', () => {
    const record = toAuditRecord({
      at: new Date('2026-03-01T10:00:00.123Z'),
      actor: { type: 'admin', name: 'ada', role: 'operator' },
      action: 'account.suspend',
      accountId: 'acc_1',
      target: null,
      ip: '10.0.0.1',
      requestId: 'r1',
      before: { suspension: null },
      after: { suspension: { reason: 'abuse' } },
    });
    expect(decodeAuditRecord(JSON.stringify(record))).toEqual(record);
    const row = toAuditRow(record);
    expect(row).toMatchObject({ at: '2026-03-01 10:00:00', at_ms: Date.parse(record.at), account_id: 'acc_1', target: '' });
    const read = { ...row, at_ms_text: String(row.at_ms) } as unknown as Parameters<typeof fromAuditRow>[0];
    expect(fromAuditRow(read)).toEqual(record);
    expect(decodeAuditRecord('{"v":1}')).toBeUndefined();
  });

  it('page with an opaque cursor and escape every filter value', () => {
    const cursor = encodeAuditCursor({ at: '2026-03-01T10:00:00.123Z', id: 'abc-1' });
    expect(decodeAuditCursor(cursor)).toEqual({ atMs: Date.parse('2026-03-01T10:00:00.123Z'), id: 'abc-1' });
    expect(decodeAuditCursor('bm9wZQ')).toBeUndefined();
    expect(decodeAuditCursor('1:Z')).toBeUndefined();
    const sql = auditQuery({ accountId: "a' OR 1=1 --", actor: 'x\\', limit: 10, after: { atMs: 5, id: 'z' }, fromMs: 1, toMs: 9 });
    expect(sql).toContain("account_id = 'a\\' OR 1=1 --'");
    expect(sql).toContain("actor = 'x\\\\'");
    expect(sql).toContain("(at_ms < 5 OR (at_ms = 5 AND id < 'z'))");
    expect(sql).toMatch(/LIMIT 1 BY id LIMIT 11$/);
  });
});
