/**
 * A typed REST client of the books and addresses API: openapi-fetch over the types that
 * openapi-typescript generated from `/openapi.json` (clients/gen/books_api.ts). Paths, parameters,
 * bodies and answers are checked by TypeScript against the document.
 *
 * ```ts
 * const api = createBooksClient("http://localhost:8000", { token });
 * const { data, error, response } = await api.POST("/addresses", {
 *   body: { name: "Ada Lovelace", city: "London", postalCode: "W1J 7NT" },
 * });
 * ```
 */
import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./gen/books_api.ts";

/** The client: `GET`, `POST`, `PUT`, `PATCH`, `DELETE` by path template. */
export type BooksClient = Client<paths>;

/** Schemas of the document (`Address`, `AddressInput`, `Book`, `Errors`, `Problem`, …). */
export type Schemas = components["schemas"];

/** Version 2 of the API (RFC 9110 PUT): send it as Content-Type or Accept. */
export const V2 = "application/vnd.books.v2+json";

/** The body type of `PATCH /addresses/{id}` (RFC 7396). */
export const MERGE_PATCH = "application/merge-patch+json";

/**
 * A client of the server at `baseUrl`. With `token`, every request carries it as a bearer token
 * (a function is asked on each request, so a refreshed token is picked up).
 */
export function createBooksClient(
  baseUrl: string,
  options: { token?: string | (() => string); fetch?: typeof fetch } = {},
): BooksClient {
  const client = createClient<paths>({ baseUrl, fetch: options.fetch });
  const { token } = options;
  if (token !== undefined) {
    client.use({
      onRequest({ request }) {
        const value = typeof token === "function" ? token() : token;
        request.headers.set("authorization", `Bearer ${value}`);
        return request;
      },
    });
  }
  return client;
}
