import { KafkaError } from './errors.js';
import type { OutgoingMessage, TopicMessages } from './producer.js';

/**
 * Natural batching for a producer with one request in flight: the first send goes out at
 * once; sends that arrive while it is in flight wait and then leave together, as one produce
 * request. Under load many HTTP requests share one round trip to Kafka; when idle nothing
 * waits (no fixed linger). A group is capped in bytes so one request stays reasonable.
 *
 * It is also what serialises sends per producer: idempotent sends must not overlap (the
 * sequence numbers of a partition advance only when a send is acknowledged).
 *
 * What a caller's answer means, so that "unavailable" is the truth:
 * - a send still queued at its deadline is taken out of the queue and fails with
 *   `kafka_send_expired`: it never reaches the network, nothing of it is written;
 * - a send already in flight at its deadline waits for the outcome, up to `inFlightTimeoutMs`
 *   from the call; without an outcome by then it fails with `kafka_outcome_unknown` (it may
 *   still be written: retry with the same ids);
 * - a send that would take the queued bytes over `maxQueuedBytes` fails at once with
 *   `kafka_producer_full`, nothing queued: memory stays bounded while Kafka is away.
 */
export type SendAll = (batches: TopicMessages[]) => Promise<void>;

export interface SendCoalescerOptions {
  /** Bytes of one produce request (default 16 MiB). */
  maxGroupBytes?: number;
  /** Bytes waiting to be sent, in flight excluded (default 64 MiB). */
  maxQueuedBytes?: number;
}

export interface SendDeadlines {
  /** A send still queued this long after the call is dropped. */
  sendTimeoutMs: number;
  /** A send in flight is waited for this long after the call at most. */
  inFlightTimeoutMs: number;
}

export interface SendCoalescer {
  send(batches: TopicMessages[], deadlines: SendDeadlines): Promise<void>;
  /** Resolves once everything handed to `send` so far was sent or failed (nothing queued or in flight). */
  idle(): Promise<void>;
  /** Bytes queued now (in flight excluded). */
  queuedBytes(): number;
}

interface Entry {
  batches: TopicMessages[];
  bytes: number;
  state: 'queued' | 'inflight' | 'settled';
  settle(err?: unknown): void;
}

export function createSendCoalescer(sendAll: SendAll, options: SendCoalescerOptions = {}): SendCoalescer {
  const maxGroupBytes = options.maxGroupBytes ?? 16 * 1024 * 1024;
  const maxQueuedBytes = options.maxQueuedBytes ?? 64 * 1024 * 1024;
  const queue: Entry[] = [];
  let queued = 0;
  let draining = false;
  let idleWaiters: (() => void)[] = [];

  function take(): Entry[] {
    const group: Entry[] = [];
    let bytes = 0;
    while (queue.length > 0 && (group.length === 0 || bytes + (queue[0]?.bytes ?? 0) <= maxGroupBytes)) {
      const next = queue.shift() as Entry;
      queued -= next.bytes;
      next.state = 'inflight';
      group.push(next);
      bytes += next.bytes;
    }
    return group;
  }

  async function drain(): Promise<void> {
    draining = true;
    try {
      for (let group = take(); group.length > 0; group = take()) {
        try {
          await sendAll(mergeByTopic(group.flatMap((q) => q.batches)));
          for (const q of group) q.settle();
        } catch (err) {
          for (const q of group) q.settle(err);
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
    send(batches, deadlines) {
      const bytes = sizeOf(batches);
      if (queue.length > 0 && queued + bytes > maxQueuedBytes) {
        return Promise.reject(
          new KafkaError('kafka_producer_full', `the producer already holds ${queued} bytes waiting for Kafka; nothing was written`, { retryable: true }),
        );
      }
      return new Promise<void>((resolve, reject) => {
        const timers: NodeJS.Timeout[] = [];
        const entry: Entry = {
          batches,
          bytes,
          state: 'queued',
          settle(err) {
            if (entry.state === 'settled') return;
            entry.state = 'settled';
            for (const t of timers) clearTimeout(t);
            if (err === undefined) resolve();
            else reject(err);
          },
        };
        timers.push(
          setTimeout(() => {
            if (entry.state !== 'queued') return;
            // Still waiting for its turn: out of the queue, so it can never be written later.
            queue.splice(queue.indexOf(entry), 1);
            queued -= entry.bytes;
            entry.settle(
              new KafkaError('kafka_send_expired', `kafka did not take the send within ${deadlines.sendTimeoutMs} ms; nothing was written`, {
                retryable: true,
              }),
            );
          }, deadlines.sendTimeoutMs),
          setTimeout(
            () => {
              if (entry.state !== 'inflight') return;
              entry.settle(
                new KafkaError(
                  'kafka_outcome_unknown',
                  `kafka did not answer a send in flight within ${deadlines.inFlightTimeoutMs} ms; it may still be written`,
                  {
                    retryable: true,
                  },
                ),
              );
            },
            Math.max(deadlines.sendTimeoutMs, deadlines.inFlightTimeoutMs),
          ),
        );
        queue.push(entry);
        queued += bytes;
        if (!draining) void drain();
      });
    },
    idle: () => (draining ? new Promise<void>((resolve) => idleWaiters.push(resolve)) : Promise.resolve()),
    queuedBytes: () => queued,
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
  for (const b of batches) {
    for (const m of b.messages) {
      // A tombstone (null value) is a key and headers only.
      bytes += (m.value?.length ?? 0) + (m.key?.length ?? 0) + 64;
      for (const [k, v] of Object.entries(m.headers ?? {})) bytes += k.length + v.length;
    }
  }
  return bytes;
}
