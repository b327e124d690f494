import type { CacheStats } from "../lib/cache_bytes.ts";
import { byteStats } from "./lru.ts";
import { createDocumentCache, type DocumentCache } from "./prepare.ts";
import { createResultCache, type ResultCache } from "./result_cache.ts";

/**
 * The caches of the GraphQL endpoint, shared by its route and the answers given in front of the
 * router (graphql/cached_front.ts): parsed and validated documents, and encoded results.
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
