import { ADDRESS_INPUT } from "./addresses_contenders.ts";
import { grpcUrlOf, httpUrlOf, type Place, startOurs } from "./ours.ts";

/** The GraphQL books query with every field. */
export const BOOKS_QUERY = "{ books { title year author { firstName lastName } } }";

/** One answer of the server: its body and headers (without date and content-length). */
export interface Answer {
  body: Uint8Array;
  headers: Record<string, string>;
}

/** What this project's server answers, learned once before the workloads run. */
export interface Reference {
  /** `GET /rest/books`; the raw ceiling serves the same bytes. */
  restBooks: Answer;
  /** `GET /api/book/{id}` answers by path. */
  bookBodies: Map<string, Answer>;
  /** The GraphQL books answer, or why GraphQL cannot be measured. */
  graphql: Answer | { skipped: string };
  /** Why gRPC cannot be measured, if it cannot. */
  grpcSkipped?: string;
  /** One `POST /addresses` answer, to derive the 201 body sizes. */
  created: { body: string; id: number };
}

/** Reads an answer, failing unless it has the expected status. */
export async function answer(response: Response, what: string, status = 200): Promise<Answer> {
  const body = new Uint8Array(await response.arrayBuffer());
  if (response.status !== status) {
    throw new Error(`${what} answered ${response.status}: ${new TextDecoder().decode(body)}`);
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of response.headers) {
    if (name !== "date" && name !== "content-length") headers[name] = value;
  }
  return { body, headers };
}

/** Starts the server on a fresh KV file, records its answers, stops it. */
export async function learnReference(
  place: Place,
  options: { kvDir: string; booksFile?: string },
): Promise<Reference> {
  const server = await startOurs(place, { ...options, name: "ours (reference)" });
  try {
    const base = httpUrlOf(server);
    const restBooks = await answer(await fetch(`${base}/rest/books`), "GET /rest/books");
    const books = JSON.parse(new TextDecoder().decode(restBooks.body)) as { id: number }[];
    const bookBodies = new Map<string, Answer>();
    for (const { id } of books) {
      const path = `/api/book/${id}`;
      bookBodies.set(path, await answer(await fetch(`${base}${path}`), `GET ${path}`));
    }
    const created = await fetch(`${base}/addresses`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(ADDRESS_INPUT),
    });
    const createdBody = new TextDecoder().decode(
      (await answer(created, "POST /addresses", 201)).body,
    );
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

/** POSTs the books query; the answer, or why it cannot serve as the workload. */
export async function learnGraphql(
  base: string,
  expectedBooks: number,
): Promise<Answer | { skipped: string }> {
  const response = await fetch(`${base}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ query: BOOKS_QUERY }),
  });
  const { body, headers } = await answer(response, "POST /graphql", response.status);
  if (response.status === 404) return { skipped: "POST /graphql answers 404 (not built yet)" };
  let count = -1;
  try {
    count = JSON.parse(new TextDecoder().decode(body))?.data?.books?.length ?? -1;
  } catch { /* reported below */ }
  if (response.status !== 200 || count !== expectedBooks) {
    const text = new TextDecoder().decode(body.subarray(0, 300));
    return { skipped: `POST /graphql answered ${response.status} with ${count} books: ${text}` };
  }
  return { body, headers };
}

/**
 * A peer's check before the load: it answers each path with exactly `ref`'s body bytes (so the
 * load's size check compares like with like) and sends each of `headers` (the ones its
 * middleware adds); each of `sameHeaders` must have ours' value.
 */
export function sameBodies(
  paths: Map<string, Answer>,
  headers: string[],
  sameHeaders: string[] = [],
) {
  return async (_: unknown, url: string) => {
    const base = new URL(url).origin;
    for (const [path, ref] of paths) {
      const response = await fetch(`${base}${path}`);
      const body = new Uint8Array(await response.arrayBuffer());
      if (response.status !== 200 || body.byteLength !== ref.body.byteLength) {
        throw new Error(`GET ${path}: ${response.status}, ${body.byteLength} B, not ours`);
      }
      if (!body.every((byte, i) => byte === ref.body[i])) {
        throw new Error(`GET ${path}: the body differs from ours`);
      }
      const absent = headers.filter((h) => !response.headers.has(h));
      if (absent.length > 0) throw new Error(`GET ${path}: no ${absent.join(", ")} header`);
      for (const h of sameHeaders) {
        const got = response.headers.get(h);
        if (got !== ref.headers[h]) {
          throw new Error(`GET ${path}: ${h} ${got}, ours ${ref.headers[h]}`);
        }
      }
    }
    return {};
  };
}
