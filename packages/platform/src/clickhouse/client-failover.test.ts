import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clickHouseUrls, createClickHouse } from './client.js';

/**
 * CLICKHOUSE_URL with several replicas: a request that finds its server down moves to the next.
 * The "replica" is a local HTTP server answering like ClickHouse's HTTP interface; the dead one
 * is a port nothing listens on (the real failover on two 18.16 replicas: the scale tests).
 */
let replica: Server;
let replicaUrl: string;
let deadUrl: string;
const bodies: string[] = [];

beforeAll(async () => {
  replica = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      bodies.push(`${req.url ?? ''} ${body}`);
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(body.startsWith('SELECT') || (req.url ?? '').includes('SELECT') ? '{"x":1}\n' : '');
    });
  });
  await new Promise<void>((r) => replica.listen(0, '127.0.0.1', r));
  replicaUrl = `http://127.0.0.1:${(replica.address() as AddressInfo).port}`;
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  deadUrl = `http://127.0.0.1:${(probe.address() as AddressInfo).port}`;
  await new Promise<void>((r) => probe.close(() => r()));
});
afterAll(() => new Promise<void>((r) => replica.close(() => r())));

describe('createClickHouse with several servers', () => {
  it('splits CLICKHOUSE_URL at commas and refuses an empty list', () => {
    expect(clickHouseUrls('http://a:8123, http://b:8123')).toEqual(['http://a:8123', 'http://b:8123']);
    expect(clickHouseUrls('http://a:8123')).toEqual(['http://a:8123']);
    expect(() => clickHouseUrls(' , ')).toThrow(/names no server/);
  });

  it('answers a read from the next server when the first is down, and stays there', async () => {
    const ch = createClickHouse({ url: `${deadUrl},${replicaUrl}`, requestTimeoutMs: 2_000 });
    try {
      expect(await ch.query('SELECT 1 AS x')).toEqual([{ x: 1 }]);
      const before = bodies.length;
      expect(await ch.query('SELECT 1 AS x')).toEqual([{ x: 1 }]);
      expect(bodies.length).toBe(before + 1);
      expect(await ch.ping()).toBe(true);
    } finally {
      await ch.close();
    }
  });

  it('fails an insert on a down server as retryable, and sends the retry (same rows) to the next', async () => {
    const ch = createClickHouse({ url: `${deadUrl},${replicaUrl}`, requestTimeoutMs: 2_000 });
    try {
      await expect(ch.insertTabSeparated('events', ['a'], ['x'])).rejects.toMatchObject({ code: 'clickhouse_unavailable', retryable: true });
      const before = bodies.length;
      await ch.insertTabSeparated('events', ['a'], ['x']);
      expect(bodies.slice(before)).toEqual([expect.stringMatching(/query=INSERT\+INTO\+events.* x\n$/s)]);
    } finally {
      await ch.close();
    }
  });

  it('moves an insert off a replica whose disk is full (18.16 answers code 75, errno 28) to the next', async () => {
    // What a full 18.16 replica answered in the disk-full scale test, as an HTTP 500.
    const full = createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(
          'Code: 75, e.displayText() = DB::ErrnoException: Cannot write to file /ch/data/data/db/events/tmp_insert_all_2_2_0/primary.idx, errno: 28, strerror: No space left on device, e.what() = DB::ErrnoException\n',
        );
      });
    });
    await new Promise<void>((r) => full.listen(0, '127.0.0.1', r));
    const ch = createClickHouse({ url: `http://127.0.0.1:${(full.address() as AddressInfo).port},${replicaUrl}`, requestTimeoutMs: 2_000 });
    try {
      await expect(ch.insertTabSeparated('events', ['a'], ['x'])).rejects.toMatchObject({ code: 'clickhouse_unavailable', retryable: true });
      const before = bodies.length;
      await ch.insertTabSeparated('events', ['a'], ['x']);
      expect(bodies.slice(before)).toEqual([expect.stringMatching(/query=INSERT\+INTO\+events.* x\n$/s)]);
    } finally {
      await ch.close();
      await new Promise<void>((r) => full.close(() => r()));
    }
  });

  it('says not ready when no server answers', async () => {
    const ch = createClickHouse({ url: `${deadUrl},${deadUrl}`, requestTimeoutMs: 2_000 });
    try {
      expect(await ch.ping()).toBe(false);
      await expect(ch.query('SELECT 1')).rejects.toMatchObject({ retryable: true });
    } finally {
      await ch.close();
    }
  });
});
