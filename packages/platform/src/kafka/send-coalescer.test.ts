import { describe, expect, it } from 'vitest';
import type { TopicMessages } from './producer.js';
import { createSendCoalescer, type SendDeadlines } from './send-coalescer.js';

const msg = (topic: string, value: string): TopicMessages[] => [{ topic, messages: [{ key: null, value }] }];
const relaxed: SendDeadlines = { sendTimeoutMs: 60_000, inFlightTimeoutMs: 60_000 };

function gatedSender() {
  const calls: TopicMessages[][] = [];
  const gates: (() => void)[] = [];
  let fail: Error | undefined;
  const sendAll = (batches: TopicMessages[]) => {
    calls.push(batches);
    return new Promise<void>((resolve, reject) => gates.push(() => (fail ? reject(fail) : resolve())));
  };
  const sentValues = () => calls.flatMap((c) => c.flatMap((b) => b.messages.map((m) => String(m.value))));
  return { sendAll, calls, sentValues, open: () => gates.shift()?.(), failWith: (e: Error) => (fail = e) };
}

const tick = () => new Promise((r) => setTimeout(r, 0));
const codeOf = async (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: { code?: string }) => err.code ?? 'no code',
  );

describe('send coalescer', () => {
  it('sends the first at once and groups those that arrive meanwhile into one request', async () => {
    const s = gatedSender();
    const { send } = createSendCoalescer(s.sendAll);
    const first = send(msg('a', '1'), relaxed);
    const second = send(msg('a', '2'), relaxed);
    const third = send(msg('b', '3'), relaxed);
    await tick();
    expect(s.calls).toHaveLength(1);
    s.open();
    await first;
    await tick();
    expect(s.calls[1]).toEqual([
      { topic: 'a', messages: [{ key: null, value: '2' }] },
      { topic: 'b', messages: [{ key: null, value: '3' }] },
    ]);
    s.open();
    await Promise.all([second, third]);
  });

  it('fails every send of a failed group, and only those', async () => {
    const s = gatedSender();
    const { send } = createSendCoalescer(s.sendAll);
    const first = send(msg('a', '1'), relaxed);
    const grouped = [send(msg('a', '2'), relaxed), send(msg('a', '3'), relaxed)];
    s.open();
    await first;
    await tick();
    s.failWith(new Error('broker gone'));
    s.open();
    const results = await Promise.allSettled(grouped);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected']);
  });

  it('caps a group in bytes', async () => {
    const s = gatedSender();
    const { send } = createSendCoalescer(s.sendAll, { maxGroupBytes: 200 });
    const first = send(msg('a', 'x'), relaxed);
    const rest = [send(msg('a', 'y'.repeat(100)), relaxed), send(msg('a', 'z'.repeat(100)), relaxed)];
    s.open();
    await first;
    await tick();
    s.open();
    await rest[0];
    await tick();
    s.open();
    await rest[1];
    expect(s.calls).toHaveLength(3);
  });

  it('tells when everything handed over has settled', async () => {
    const s = gatedSender();
    const coalescer = createSendCoalescer(s.sendAll);
    const sent = coalescer.send(msg('a', '1'), relaxed);
    const queued = coalescer.send(msg('a', '2'), relaxed);
    let idle = false;
    void coalescer.idle().then(() => (idle = true));
    s.open();
    await sent;
    await tick();
    expect(idle).toBe(false); // the second send is still to go
    s.open();
    await queued;
    await tick();
    expect(idle).toBe(true);
    await coalescer.idle(); // nothing pending: at once
  });

  // Regression: sends answered 503 stayed queued and were written after the broker came back
  // (30,100 events a client had been told were not accepted).
  it('drops a send that is still queued at its deadline: it never reaches the network', async () => {
    const s = gatedSender();
    const coalescer = createSendCoalescer(s.sendAll);
    const inFlight = coalescer.send(msg('a', 'in-flight'), { sendTimeoutMs: 20, inFlightTimeoutMs: 60_000 });
    const queued = coalescer.send(msg('a', 'queued'), { sendTimeoutMs: 20, inFlightTimeoutMs: 60_000 });
    expect(await codeOf(queued)).toBe('kafka_send_expired');
    expect(coalescer.queuedBytes()).toBe(0);
    // The send in flight outlived its deadline: it waits for its outcome instead.
    s.open();
    expect(await codeOf(inFlight)).toBe('ok');
    await coalescer.idle();
    expect(s.sentValues()).toEqual(['in-flight']);
  });

  it('waits for a send in flight up to its in-flight bound, then says the outcome is unknown', async () => {
    const s = gatedSender();
    const coalescer = createSendCoalescer(s.sendAll);
    const inFlight = coalescer.send(msg('a', '1'), { sendTimeoutMs: 10, inFlightTimeoutMs: 60 });
    const started = Date.now();
    expect(await codeOf(inFlight)).toBe('kafka_outcome_unknown');
    expect(Date.now() - started).toBeGreaterThanOrEqual(55);
    // The request itself still ends; idle() waits for it (what dedupe relies on).
    let idle = false;
    void coalescer.idle().then(() => (idle = true));
    await tick();
    expect(idle).toBe(false);
    s.open();
    await coalescer.idle();
  });

  it('refuses at once, queueing nothing, when the queued bytes would pass the bound', async () => {
    const s = gatedSender();
    const coalescer = createSendCoalescer(s.sendAll, { maxQueuedBytes: 1_000 });
    const inFlight = coalescer.send(msg('a', 'x'.repeat(5_000)), relaxed); // in flight: not counted
    const queued = coalescer.send(msg('a', 'y'.repeat(600)), relaxed);
    expect(coalescer.queuedBytes()).toBeGreaterThan(600);
    expect(await codeOf(coalescer.send(msg('a', 'z'.repeat(600)), relaxed))).toBe('kafka_producer_full');
    s.open();
    await inFlight;
    await tick();
    s.open();
    await queued;
    expect(s.sentValues().map((v) => v[0])).toEqual(['x', 'y']);
  });
});
