import { withKvRetry } from "./retry.ts";

// Deno KV reads at most 10 keys per getMany.
const GET_MANY_MAX = 10;

/** Reads any number of keys, 10 per read and the reads in parallel, each retried. */
export async function getAll<T>(
  kv: Deno.Kv,
  keys: readonly Deno.KvKey[],
): Promise<Deno.KvEntryMaybe<T>[]> {
  const reads: Promise<Deno.KvEntryMaybe<T>[]>[] = [];
  for (let i = 0; i < keys.length; i += GET_MANY_MAX) {
    const chunk = keys.slice(i, i + GET_MANY_MAX);
    reads.push(withKvRetry(() => kv.getMany<T[]>(chunk)));
  }
  return (await Promise.all(reads)).flat();
}
