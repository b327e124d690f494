/**
 * Runs at most `slots` pieces of work at a time; the others wait in arrival order. A waiting
 * caller holds nothing but its place in the queue, so what the work allocates (a page of
 * deserialized entries) exists for at most `slots` callers at once, however many are waiting.
 */
export function workSlots(slots: number): <T>(work: () => Promise<T>) => Promise<T> {
  let free = slots;
  const waiting: (() => void)[] = [];
  return async (work) => {
    if (free > 0) free--;
    else await new Promise<void>((resolve) => waiting.push(resolve));
    try {
      return await work();
    } finally {
      const next = waiting.shift();
      if (next === undefined) free++;
      else next();
    }
  };
}
