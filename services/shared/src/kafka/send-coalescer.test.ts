import { describe, expect, it } from 'vitest';
import type { TopicMessages } from './producer.js';
import { createSendCoalescer } from './send-coalescer.js';

const msg = (topic: string, value: string): TopicMessages[] => [{ topic, messages: [{ key: null, value }] }];

function gatedSender() {
  const calls: TopicMessages[][] = [];
  const gates: (() => void)[] = [];
  let fail: Error | undefined;
  const sendAll = (batches: TopicMessages[]) => {
    calls.push(batches);
    return new Promise<void>((resolve, reject) => gates.push(() => (fail ? reject(fail) : resolve())));
  };
  return { sendAll, calls, open: () => gates.shift()?.(), failWith: (e: Error) => (fail = e) };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

describe('send coalescer', () => {
  it('sends the first at once and groups those that arrive meanwhile into one request', async () => {
    const s = gatedSender();
    const { send } = createSendCoalescer(s.sendAll);
    const first = send(msg('a', '1'));
    const second = send(msg('a', '2'));
    const third = send(msg('b', '3'));
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
    const first = send(msg('a', '1'));
    const grouped = [send(msg('a', '2')), send(msg('a', '3'))];
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
    const { send } = createSendCoalescer(s.sendAll, 200);
    const first = send(msg('a', 'x'));
    const rest = [send(msg('a', 'y'.repeat(100))), send(msg('a', 'z'.repeat(100)))];
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
    const sent = coalescer.send(msg('a', '1'));
    const queued = coalescer.send(msg('a', '2'));
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
});
