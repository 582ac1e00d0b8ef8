/**
 * Takes turns for long CPU work that many requests do at once (reading CSV uploads): each
 * holder works for a slice of about `sliceMs`, then waits until every other waiting holder had
 * a slice, with one pass of the event loop (and so of every other request's I/O) between two
 * slices. Without it twenty CSV uploads read at once made each turn of the event loop take
 * ~160 ms (a 64 KB piece of CSV each, ~8 ms apiece), and another tenant's small request, which
 * needs several turns, waited ~400 ms.
 */
export interface TimeSlicer {
  /** A holder's pace: resolves at once while its slice lasts, else after its next turn. */
  pacer(): () => Promise<void> | undefined;
}

export function createTimeSlicer(sliceMs = 2): TimeSlicer {
  const waiting: (() => void)[] = [];
  let scheduled = false;

  // One waiter per check phase: the poll phase (I/O of every other request) runs in between.
  function pump(): void {
    if (scheduled || waiting.length === 0) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      waiting.shift()?.();
      pump();
    });
  }

  return {
    pacer() {
      let sliceStart = performance.now();
      return () => {
        if (performance.now() - sliceStart < sliceMs) return undefined;
        return new Promise<void>((resolve) => {
          waiting.push(() => {
            sliceStart = performance.now();
            resolve();
          });
          pump();
        });
      };
    },
  };
}
