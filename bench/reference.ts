import { ADDRESS_INPUT } from "./addresses_contenders.ts";
import { grpcUrlOf, httpUrlOf, type Place, startOurs } from "./ours.ts";

/** The GraphQL books query with every field. */
export const BOOKS_QUERY = "{ books { title year author { firstName lastName } } }";

/** What this project's server answers, learned once before the workloads run. */
export interface Reference {
  /** `GET /rest/books` body; the raw ceiling serves the same bytes. */
  restBooks: Uint8Array;
  /** `GET /api/book/{id}` bodies by path. */
  bookBodies: Map<string, Uint8Array>;
  /** The GraphQL books response body, or why GraphQL cannot be measured. */
  graphql: { body: Uint8Array } | { skipped: string };
  /** Why gRPC cannot be measured, if it cannot. */
  grpcSkipped?: string;
  /** One `POST /addresses` answer, to derive the 201 body sizes. */
  created: { body: string; id: number };
}

async function bytes(response: Response, what: string, status = 200): Promise<Uint8Array> {
  const body = new Uint8Array(await response.arrayBuffer());
  if (response.status !== status) {
    throw new Error(`${what} answered ${response.status}: ${new TextDecoder().decode(body)}`);
  }
  return body;
}

/** Starts the server on a fresh KV file, records its answers, stops it. */
export async function learnReference(
  place: Place,
  options: { kvDir: string; booksFile?: string },
): Promise<Reference> {
  const server = await startOurs(place, { ...options, name: "ours (reference)" });
  try {
    const base = httpUrlOf(server);
    const restBooks = await bytes(await fetch(`${base}/rest/books`), "GET /rest/books");
    const books = JSON.parse(new TextDecoder().decode(restBooks)) as { id: number }[];
    const bookBodies = new Map<string, Uint8Array>();
    for (const { id } of books) {
      const path = `/api/book/${id}`;
      bookBodies.set(path, await bytes(await fetch(`${base}${path}`), `GET ${path}`));
    }
    const created = await fetch(`${base}/addresses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(ADDRESS_INPUT),
    });
    const createdBody = new TextDecoder().decode(await bytes(created, "POST /addresses", 201));
    return {
      restBooks,
      bookBodies,
      graphql: await learnGraphql(base, books.length),
      grpcSkipped: grpcUrlOf(server) === undefined
        ? "the server's listening line has no grpc URL (no gRPC listener in this build)"
        : undefined,
      created: { body: createdBody, id: JSON.parse(createdBody).id },
    };
  } finally {
    await server.stop();
  }
}

/** POSTs the books query; the response body, or why it cannot serve as the workload. */
export async function learnGraphql(
  base: string,
  expectedBooks: number,
): Promise<{ body: Uint8Array } | { skipped: string }> {
  const response = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query: BOOKS_QUERY }),
  });
  const body = new Uint8Array(await response.arrayBuffer());
  if (response.status === 404) return { skipped: "POST /graphql answers 404 (not built yet)" };
  let count = -1;
  try {
    count = JSON.parse(new TextDecoder().decode(body))?.data?.books?.length ?? -1;
  } catch { /* reported below */ }
  if (response.status !== 200 || count !== expectedBooks) {
    const text = new TextDecoder().decode(body.subarray(0, 300));
    return { skipped: `POST /graphql answered ${response.status} with ${count} books: ${text}` };
  }
  return { body };
}
