/**
 * A typed GraphQL client of the books and addresses API: sends the typed documents generated
 * from clients/graphql/addresses.graphql (clients/gen/graphql.ts) with `fetch`, so an operation's
 * variables and its `data` are checked by TypeScript against the schema.
 *
 * ```ts
 * const api = createGraphqlClient("http://localhost:8000", { token });
 * const { data, errors } = await api.request(CreateAddressDocument, {
 *   input: { name: "Ada Lovelace", city: "London", postalCode: "W1J 7NT" },
 * });
 * ```
 */
import type { TypedDocumentNode } from "@graphql-typed-document-node/core";
import { print } from "graphql";

/** One GraphQL error: `extensions.code` is the error code (docs/errors.md). */
export interface GraphqlError {
  message: string;
  path?: (string | number)[];
  extensions: {
    code: string;
    /** The input field of an `invalid-field` error. */
    field?: string;
    [name: string]: unknown;
  };
}

/** An answer: the HTTP status and headers, and the GraphQL response. */
export interface GraphqlAnswer<Data> {
  status: number;
  headers: Headers;
  /** Absent when nothing ran (a request error); null when a non-null root field failed. */
  data?: Data | null;
  errors?: GraphqlError[];
}

/** The client: one method, for any typed document. */
export interface GraphqlClient {
  request<Data, Variables>(
    document: TypedDocumentNode<Data, Variables>,
    variables: Variables,
    headers?: Record<string, string>,
  ): Promise<GraphqlAnswer<Data>>;
}

// Each document is printed once.
const printed = new WeakMap<object, string>();

/**
 * A client of the server at `baseUrl` (`POST {baseUrl}/graphql`, answers as
 * `application/graphql-response+json`). With `token`, every request carries it as a bearer token
 * (a function is asked on each request).
 */
export function createGraphqlClient(
  baseUrl: string,
  options: { token?: string | (() => string); fetch?: typeof fetch } = {},
): GraphqlClient {
  return {
    async request(document, variables, headers = {}) {
      let query = printed.get(document);
      if (query === undefined) printed.set(document, query = print(document));
      const token = typeof options.token === "function" ? options.token() : options.token;
      const res = await (options.fetch ?? fetch)(`${baseUrl}/graphql`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          accept: "application/graphql-response+json",
          ...(token !== undefined && { authorization: `Bearer ${token}` }),
          ...headers,
        },
        body: JSON.stringify({ query, variables }),
      });
      const body = await res.json();
      return { status: res.status, headers: res.headers, ...body };
    },
  };
}
