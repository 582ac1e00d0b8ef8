/**
 * Which offsets of one partition may be committed while work finishes out of order (one
 * account waiting on a rate limit, another syncing): the commit is the lowest offset whose
 * work is not finished, or the one after the last added when all is finished. Pure.
 */
export interface CommittableOffsets {
  /** Offsets are added in increasing order. */
  add(offset: string): void;
  finish(offset: string): void;
  /** The next offset to read after a restart, when everything before it is finished. */
  committable(): string | undefined;
  unfinished(): number;
  /** The offset after the last one added. */
  next(): string | undefined;
}

export function createCommittableOffsets(): CommittableOffsets {
  // Unfinished offsets in order, plus those finished ahead of an unfinished one.
  const order: bigint[] = [];
  const done = new Set<bigint>();
  let head = 0;
  let last: bigint | undefined;
  const pending = new Set<bigint>();

  function advance(): void {
    while (head < order.length && done.has(order[head] as bigint)) {
      done.delete(order[head] as bigint);
      head += 1;
    }
    // Drop the consumed prefix now and then so the array does not grow without bound.
    if (head > 1024 && head * 2 > order.length) {
      order.splice(0, head);
      head = 0;
    }
  }

  return {
    add(offset) {
      const o = BigInt(offset);
      order.push(o);
      last = o;
      pending.add(o);
    },
    finish(offset) {
      const o = BigInt(offset);
      if (!pending.delete(o)) return;
      done.add(o);
      advance();
    },
    committable() {
      if (last === undefined) return undefined;
      return head < order.length ? String(order[head]) : String(last + 1n);
    },
    unfinished: () => pending.size,
    next: () => (last === undefined ? undefined : String(last + 1n)),
  };
}
