import type { OutgoingMessage, TopicMessages } from './producer.js';

/**
 * Natural batching for a producer with one request in flight: the first send goes out at
 * once; sends that arrive while it is in flight wait and then leave together, as one produce
 * request. Under load many HTTP requests share one round trip to Kafka; when idle nothing
 * waits (no fixed linger). A group is capped in bytes so one request stays reasonable.
 */
export type SendAll = (batches: TopicMessages[]) => Promise<void>;

export interface SendCoalescer {
  send: SendAll;
  /** Resolves once everything handed to `send` so far was sent or failed (nothing queued or in flight). */
  idle(): Promise<void>;
}

interface Queued {
  batches: TopicMessages[];
  bytes: number;
  resolve(): void;
  reject(err: unknown): void;
}

export function createSendCoalescer(sendAll: SendAll, maxGroupBytes = 16 * 1024 * 1024): SendCoalescer {
  const queue: Queued[] = [];
  let draining = false;
  let idleWaiters: (() => void)[] = [];

  async function drain(): Promise<void> {
    draining = true;
    try {
      while (queue.length > 0) {
        const group: Queued[] = [];
        let bytes = 0;
        while (queue.length > 0 && (group.length === 0 || bytes + (queue[0]?.bytes ?? 0) <= maxGroupBytes)) {
          const next = queue.shift() as Queued;
          group.push(next);
          bytes += next.bytes;
        }
        try {
          await sendAll(mergeByTopic(group.flatMap((q) => q.batches)));
          for (const q of group) q.resolve();
        } catch (err) {
          for (const q of group) q.reject(err);
        }
      }
    } finally {
      draining = false;
      const waiters = idleWaiters;
      idleWaiters = [];
      for (const w of waiters) w();
    }
  }

  return {
    send: (batches) =>
      new Promise<void>((resolve, reject) => {
        queue.push({ batches, bytes: sizeOf(batches), resolve, reject });
        if (!draining) void drain();
      }),
    idle: () => (draining ? new Promise<void>((resolve) => idleWaiters.push(resolve)) : Promise.resolve()),
  };
}

function mergeByTopic(batches: TopicMessages[]): TopicMessages[] {
  const byTopic = new Map<string, OutgoingMessage[]>();
  for (const b of batches) {
    const list = byTopic.get(b.topic);
    if (list) list.push(...b.messages);
    else byTopic.set(b.topic, [...b.messages]);
  }
  return [...byTopic].map(([topic, messages]) => ({ topic, messages }));
}

function sizeOf(batches: TopicMessages[]): number {
  let bytes = 0;
  for (const b of batches) for (const m of b.messages) bytes += (m.value?.length ?? 0) + (m.key?.length ?? 0) + 64;
  return bytes;
}
