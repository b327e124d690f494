import type { CacheStats } from "../lib/cache_bytes.ts";
import { byteStats } from "./lru.ts";
import { createDocumentCache, type DocumentCache } from "./prepare.ts";
import { createResultCache, type ResultCache } from "./result_cache.ts";

/**
 * The caches of the GraphQL endpoint: parsed and validated documents (with their planned and
 * compiled operations), and encoded results. Made by the composition so that it can report what
 * they hold.
 */
export interface GraphqlCaches {
  documents: DocumentCache;
  results: ResultCache;
  /** What each holds, by its own accounting (each is bounded by bytes). */
  stats: { documents: CacheStats; results: CacheStats };
}

/** New, empty caches with their default bounds. */
export function createGraphqlCaches(): GraphqlCaches {
  const documents = createDocumentCache();
  const results = createResultCache();
  return { documents, results, stats: { documents: byteStats(documents), results: results.stats } };
}
