// Generated from /openapi.json by openapi-typescript (clients/generate.ts): do not edit.
// Regenerate with `deno task generate:client`; `deno task check` fails when stale.

export interface paths {
    "/rest/books": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List all books (ascending id)
         * @description The whole catalogue, ascending id, with a strong `ETag`; `If-None-Match` with that ETag answers 304. Needs the scope `books:read` only with `AUTH_BOOKS=required`.
         */
        get: operations["listBooks"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/api/book/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get one book
         * @description One book of the catalogue by its id, with a strong `ETag`; `If-None-Match` with that ETag answers 304. Needs the scope `books:read` only with `AUTH_BOOKS=required`.
         */
        get: operations["getBook"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/addresses/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Export all the caller's addresses
         * @description Streams every address of the caller by ascending id. By default (or with `Accept: application/x-ndjson`) as NDJSON, one address per line; with `Accept: application/json` as one JSON object `{addresses: [...]}`. An address stored before the request and not deleted during it is always included. Needs the scope `addresses:read`.
         */
        get: operations["exportAddresses"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/addresses": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List the caller's addresses by ascending id, one page at a time
         * @description At most `limit` (default 50, at most 500) of the caller's addresses after `cursor`, ascending id. `nextCursor` is the opaque cursor of the next page, `null` on the last; `limit` may change from page to page. Needs the scope `addresses:read` when authentication is on.
         */
        get: operations["listAddresses"];
        put?: never;
        /**
         * Create an address (every request creates a new one, unless Idempotency-Key repeats)
         * @description Stores the address for the caller with a newly generated id and answers it with `Location` and `ETag`. Fields are trimmed; unknown members are ignored. With `Idempotency-Key` a retried request replays the first answer instead of creating another address. `If-None-Match: *` is 412 (the collection exists). Needs the scope `addresses:write` when authentication is on.
         */
        post: operations["createAddress"];
        /**
         * Erase all the caller's addresses
         * @description Deletes every address of the caller and the caller's Idempotency-Key records, in batches (each batch atomic). `If-Match: *` confirms it; without If-Match the answer is 428 `precondition-required` and nothing is deleted. Repeating it answers 204 again. Needs the scope `addresses:write`.
         */
        delete: operations["eraseAddresses"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/addresses/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Stream the caller's address changes
         * @description Server-Sent Events (`text/event-stream`), one event per committed change of the caller's addresses, in commit order, whichever style or process made it: `event:` the type (`created`, `replaced`, `updated`, `deleted`), `id:` the resume token, `data:` an `AddressEvent`. Without `Last-Event-ID` (or `after`) the stream starts with the changes committed after it opened; its first line is an `id:` of that position, so a client that reconnects before any change loses none. A comment line comes at least every 15 s. The stream ends when the token that opened it expires, at shutdown, or when the client reads too slowly; a client resumes with the last id it received. Changes are kept for `EVENTS_RETENTION` (a day by default). Open streams are limited per caller and per server (429 `rate-limited`). Needs the scope `addresses:read`.
         */
        get: operations["watchAddresses"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/addresses/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get one of the caller's addresses
         * @description The address with a strong `ETag` (for `If-Match` on writes); `If-None-Match` with that ETag answers 304. Another owner's address is not found (404). Needs the scope `addresses:read` when authentication is on.
         */
        get: operations["getAddress"];
        /**
         * Version 1: replace city and postal code, or create with a new id. Version 2: store at this id
         * @description Version 1 (`application/json`): the caller's existing address gets city and postalCode from the body and keeps its name (200); otherwise (absent, or another owner's) the body is stored as a new address with a generated id (201, Location of that id).
         *
         *     Version 2 (`application/vnd.books.v2+json` in Content-Type or Accept, RFC 9110): the caller's existing address is replaced whole, name included (200); repeating the request leaves the same state. An id never allocated (above the id counter, by at most 1,000,000) is created at that id (201, Location of the path) and moves the counter. Any other id is 409 `id-taken`, whether another owner holds it, it was deleted or it was allocated and not used: ids are never reused, and the answer says nothing about other owners.
         *
         *     `If-Match` and `If-None-Match` are evaluated as RFC 9110 orders them, on the caller's address at this id in the atomic operation that writes: `If-None-Match: *` creates only if the caller has no address here (version 2: the standard create-if-absent), and is 412 when it has one; `If-Match` on an id the caller does not hold is 412.
         *
         *     Needs the scope `addresses:write` when authentication is on.
         */
        put: operations["putAddress"];
        post?: never;
        /**
         * Delete one of the caller's addresses
         * @description Removes the address; its id is never handed out again. Another owner's address is not found (404). `If-None-Match` with the current ETag (or `*`) is 412 and deletes nothing. Needs the scope `addresses:write` when authentication is on.
         */
        delete: operations["deleteAddress"];
        options?: never;
        head?: never;
        /**
         * Change some members of an address (JSON Merge Patch, RFC 7396)
         * @description Only the members sent change; unknown members are ignored; `null` (removing a member) is 400 `invalid-field` because every member is required. Another Content-Type is 415 with `Accept-Patch: application/merge-patch+json`. `If-None-Match` with the current ETag (or `*`) is 412 and changes nothing. Needs the scope `addresses:write` when authentication is on.
         */
        patch: operations["patchAddress"];
        trace?: never;
    };
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Liveness: 200 while the process serves
         * @description Answers while the process serves, whatever the load or the credentials (no token, no rate limit). Under `deno serve`, a server whose start-up failed answers 503.
         */
        get: operations["getLiveness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Readiness: every listener serves, KV reachable, catalogue seeded, not shutting down
         * @description 200 once every listener of the process serves, KV answers, writes work and the catalogue is seeded; 503 `service-unavailable` or `storage-unavailable` otherwise (writes failing, the KV file not the one opened), and while shutting down. Writes are covered by a probe write when no write succeeded in the last second. No token, no rate limit.
         */
        get: operations["getReadiness"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * This OpenAPI 3.1 document
         * @description The description of the REST API that clients are generated from (JSON Schema 2020-12 schemas).
         */
        get: operations["getOpenApiDocument"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Interactive API reference (Swagger UI)
         * @description An HTML page rendering `/openapi.json`; every asset is served by this server.
         */
        get: operations["getApiReference"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/docs/errors": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The error-code reference
         * @description Markdown with one entry per error code; the `help` link of every error points at its entry.
         */
        get: operations["getErrorReference"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Entry point: links to every resource
         * @description HAL-style `_links` to every resource of the API (`templated` marks an RFC 6570 template), so a client needs to know only this URI.
         */
        get: operations["getEntryPoint"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        Errors: {
            errors: {
                /** @example book-not-found */
                error: string;
                message: string;
                detail: string;
                /**
                 * Format: uri-reference
                 * @description The entry of the error code in the error reference (`/docs/errors#<code>`).
                 * @example /docs/errors#book-not-found
                 */
                help?: string;
            }[];
        };
        Problem: {
            /**
             * Format: uri-reference
             * @description The error code's entry in the error reference.
             * @example /docs/errors#book-not-found
             */
            type: string;
            /** @example The book was not found. */
            title: string;
            /** @example 404 */
            status: number;
            /** @example No book has id 99999. */
            detail: string;
            /**
             * Format: uri-reference
             * @description The path and the request id of this occurrence.
             * @example /api/book/99999#request-5b0c1f8e-0a43-4c53-9d0b-0f6f7d2a4f11
             */
            instance: string;
            /** @description Every problem of the request (the first one is `type` and `detail`). */
            errors: {
                error: string;
                detail: string;
            }[];
        };
        Book: {
            /** @example 1 */
            id: number;
            /** @example Things Fall Apart */
            title: string;
            /** @example 1958 */
            year: number;
            author: components["schemas"]["Author"];
        };
        Author: {
            firstName: string;
            lastName: string;
        };
        Address: {
            /** @example 1 */
            id: number;
            name: string;
            city: string;
            postalCode: string;
        };
        AddressExport: {
            addresses: components["schemas"]["Address"][];
        };
        /** @description One change of the caller's address book, the `data:` of an event. */
        AddressEvent: {
            /** @enum {string} */
            type: "created" | "replaced" | "updated" | "deleted";
            /** @example 1 */
            id: number;
            address?: components["schemas"]["Address"] & unknown;
            /**
             * @description The ETag of that version (the `ETag` header's value); absent for `deleted`.
             * @example "n5rVYl3K1Zm4Qx0sTq2Wbg"
             */
            etag?: string;
        };
        /** @description An address as a create or a replace gives it. Unknown members are ignored; `null` on an optional member means absent, as leaving it out, and is 400 `invalid-field` on a required one. */
        AddressInput: {
            /** @example Ada Lovelace */
            name: string;
            /** @example London */
            city: string;
            /**
             * @description Letters and digits of any script, spaces and hyphens; at most 20 characters after trimming.
             * @example W1J 7NT
             */
            postalCode: string;
        };
        AddressPage: {
            addresses: components["schemas"]["Address"][];
            /** @description Opaque cursor for the next page; null on the last page. */
            nextCursor: string | null;
        };
        AddressMergePatch: {
            /** @example Ada Lovelace */
            name?: string;
            /** @example London */
            city?: string;
            /**
             * @description Letters and digits of any script, spaces and hyphens; at most 20 characters after trimming.
             * @example W1J 7NT
             */
            postalCode?: string;
        };
        Status: {
            status: string;
        };
    };
    responses: {
        /** @description `unauthorized`: a token is needed and none was sent, or the token sent is not valid (when authentication is configured). */
        Unauthorized: {
            headers: {
                /** @description The challenge: `Bearer realm="books"`, with `error="invalid_token"` when a token was sent. */
                "WWW-Authenticate": string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description `forbidden`: the token lacks the scope this operation needs. */
        Forbidden: {
            headers: {
                /** @description Names the scope: `Bearer error="insufficient_scope", scope="…"`. */
                "WWW-Authenticate": string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description `rate-limited`: over the rate limit (`RATE_LIMIT`). */
        RateLimited: {
            headers: {
                /** @description Seconds to wait before retrying. */
                "Retry-After": number;
                /** @description The quota left (IETF httpapi draft). */
                RateLimit?: string;
                /** @description The quota (IETF httpapi draft). */
                "RateLimit-Policy"?: string;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
        /** @description `service-unavailable`: storage busy past the retry budget or unreachable, token keys unavailable, the server shutting down, or (under `deno serve`) start-up failed; `storage-unavailable`: storage cannot be written (disk full, read-only, the KV file gone or replaced). */
        ServiceUnavailable: {
            headers: {
                /** @description Seconds to wait before retrying. */
                "Retry-After"?: number;
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Errors"];
                "application/problem+json": components["schemas"]["Problem"];
            };
        };
    };
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    listBooks: {
        parameters: {
            query?: never;
            header?: {
                /** @description ETags (or `*`) the client holds; a match answers 304 without a body. */
                "if-none-match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every book of the catalogue */
            200: {
                headers: {
                    /** @description Strong validator of this representation (If-None-Match, If-Match). */
                    ETag?: string;
                    /** @description `max-age=300` for books, `private, no-cache` for addresses. */
                    "Cache-Control"?: string;
                    /** @description `Accept`: the media type follows Accept. */
                    Vary?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Book"][];
                    "application/vnd.books.v1+json": components["schemas"]["Book"][];
                    "application/vnd.books.v2+json": components["schemas"]["Book"][];
                };
            };
            /** @description Not Modified: `If-None-Match` matched the current ETag; no body. */
            304: {
                headers: {
                    /** @description Strong validator of this representation (If-None-Match, If-Match). */
                    ETag?: string;
                    /** @description `max-age=300` for books, `private, no-cache` for addresses. */
                    "Cache-Control"?: string;
                    /** @description `Accept`: the media type follows Accept. */
                    Vary?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `not-acceptable` */
            406: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getBook: {
        parameters: {
            query?: never;
            header?: {
                /** @description ETags (or `*`) the client holds; a match answers 304 without a body. */
                "if-none-match"?: string;
            };
            path: {
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The book */
            200: {
                headers: {
                    /** @description Strong validator of this representation (If-None-Match, If-Match). */
                    ETag?: string;
                    /** @description `max-age=300` for books, `private, no-cache` for addresses. */
                    "Cache-Control"?: string;
                    /** @description `Accept`: the media type follows Accept. */
                    Vary?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Book"];
                    "application/vnd.books.v1+json": components["schemas"]["Book"];
                    "application/vnd.books.v2+json": components["schemas"]["Book"];
                };
            };
            /** @description Not Modified: `If-None-Match` matched the current ETag; no body. */
            304: {
                headers: {
                    /** @description Strong validator of this representation (If-None-Match, If-Match). */
                    ETag?: string;
                    /** @description `max-age=300` for books, `private, no-cache` for addresses. */
                    "Cache-Control"?: string;
                    /** @description `Accept`: the media type follows Accept. */
                    Vary?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `invalid-parameter`: id is not a positive integer */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `book-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not-acceptable` */
            406: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    exportAddresses: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller's addresses */
            200: {
                headers: {
                    /** @description `attachment` with a file name. */
                    "Content-Disposition"?: string;
                    Vary?: string;
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "id": 1,
                     *       "name": "Ada Lovelace",
                     *       "city": "London",
                     *       "postalCode": "W1J 7NT"
                     *     }
                     */
                    "application/x-ndjson": components["schemas"]["Address"];
                    "application/json": components["schemas"]["AddressExport"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `not-acceptable` */
            406: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    listAddresses: {
        parameters: {
            query?: {
                limit?: number;
                /** @description A `nextCursor` of an earlier page, opaque. It is the caller's: one another owner holds, an edited one, or one of another server's storage is 400 `invalid-parameter`. */
                cursor?: string;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AddressPage"];
                    "application/vnd.books.v1+json": components["schemas"]["AddressPage"];
                    "application/vnd.books.v2+json": components["schemas"]["AddressPage"];
                };
            };
            /** @description `invalid-parameter`: limit or cursor */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `not-acceptable` */
            406: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    createAddress: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the POST safe to retry for 24 hours: the same key with the same body replays the first response (status, body, Location, ETag; `Idempotent-Replayed: true`) and creates nothing; with another body it is 422 `idempotency-key-reused`; while the first is still running with another body, 409 `request-in-progress`. Scoped to the caller. */
                "idempotency-key"?: string;
                /** @description The collection has no ETag: only `*` holds (it always exists); any other value is 412 `precondition-failed`. */
                "if-match"?: string;
                /** @description The collection always exists and has no ETag: `*` is 412 `precondition-failed` (RFC 9110 13.1.2); a list of ETags never matches, so the request goes ahead. */
                "if-none-match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        /** @description `application/json` or `application/vnd.books.v1+json` is version 1; `application/vnd.books.v2+json` (here or in Accept) is version 2. */
        requestBody: {
            content: {
                "application/json": components["schemas"]["AddressInput"];
                "application/vnd.books.v1+json": components["schemas"]["AddressInput"];
                "application/vnd.books.v2+json": components["schemas"]["AddressInput"];
            };
        };
        responses: {
            /** @description Created (or replayed by Idempotency-Key) */
            201: {
                headers: {
                    /** @description Strong validator of this version (If-Match, If-None-Match): opaque, made at each write, no other address's or version's. */
                    ETag?: string;
                    Vary?: string;
                    /** @description `/addresses/{id}` of the address. */
                    Location?: string;
                    /** @description `true` when the answer replays an earlier request with the same key. */
                    "Idempotent-Replayed"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Address"];
                    "application/vnd.books.v1+json": components["schemas"]["Address"];
                    "application/vnd.books.v2+json": components["schemas"]["Address"];
                };
            };
            /** @description `invalid-body`, `invalid-field` or `invalid-parameter` (Idempotency-Key) */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `not-acceptable` */
            406: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `request-in-progress` */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `precondition-failed`: `If-None-Match: *`, or an `If-Match` other than `*` */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload-too-large` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `unsupported-media-type` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `idempotency-key-reused` */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    eraseAddresses: {
        parameters: {
            query?: never;
            header?: {
                /** @description `*` to confirm (the collection has no other ETag: any other value is 412 `precondition-failed`). */
                "if-match"?: string;
                /** @description The collection always exists and has no ETag: `*` is 412 `precondition-failed` (RFC 9110 13.1.2); a list of ETags never matches, so the request goes ahead. */
                "if-none-match"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Erased (or there was nothing to erase) */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `precondition-failed`: If-Match other than `*`, or If-None-Match: `*` */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `precondition-required`: no If-Match */
            428: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    watchAddresses: {
        parameters: {
            query?: {
                /** @description A resume token: the `id:` of the last event received. The stream starts after that change. A token of another caller, edited or of another server's storage is 400 `invalid-parameter`; one whose following changes are no longer kept is 410 `events-expired` (read the addresses again, then open a stream without a token). */
                after?: string;
            };
            header?: {
                /** @description A resume token: the `id:` of the last event received. The stream starts after that change. A token of another caller, edited or of another server's storage is 400 `invalid-parameter`; one whose following changes are no longer kept is 410 `events-expired` (read the addresses again, then open a stream without a token). An `EventSource` sends it when it reconnects; it wins over `after`. */
                "last-event-id"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The stream of changes */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "type": "created",
                     *       "id": 1,
                     *       "address": {
                     *         "id": 1,
                     *         "name": "Ada Lovelace",
                     *         "city": "London",
                     *         "postalCode": "W1J 7NT"
                     *       }
                     *     }
                     */
                    "text/event-stream": components["schemas"]["AddressEvent"];
                };
            };
            /** @description `invalid-parameter`: a resume token this server did not issue to the caller */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `events-expired`: the changes after the token are no longer kept */
            410: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getAddress: {
        parameters: {
            query?: never;
            header?: {
                /** @description ETags (or `*`) the client holds; a match answers 304 without a body. */
                "if-none-match"?: string;
            };
            path: {
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The address */
            200: {
                headers: {
                    /** @description Strong validator of this representation (If-None-Match, If-Match). */
                    ETag?: string;
                    /** @description `max-age=300` for books, `private, no-cache` for addresses. */
                    "Cache-Control"?: string;
                    /** @description `Accept`: the media type follows Accept. */
                    Vary?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Address"];
                    "application/vnd.books.v1+json": components["schemas"]["Address"];
                    "application/vnd.books.v2+json": components["schemas"]["Address"];
                };
            };
            /** @description Not Modified: `If-None-Match` matched the current ETag; no body. */
            304: {
                headers: {
                    /** @description Strong validator of this representation (If-None-Match, If-Match). */
                    ETag?: string;
                    /** @description `max-age=300` for books, `private, no-cache` for addresses. */
                    "Cache-Control"?: string;
                    /** @description `Accept`: the media type follows Accept. */
                    Vary?: string;
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `invalid-parameter` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `address-not-found` (also another owner's address) */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not-acceptable` */
            406: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    putAddress: {
        parameters: {
            query?: never;
            header?: {
                /** @description Only act if the address still has one of these ETags, or exists for `*` (else 412 `precondition-failed`). */
                "if-match"?: string;
                /** @description Only act if the caller's address at this id has none of these ETags (weak comparison: `W/` is ignored), or, with `*`, if the caller has no address at this id: `If-None-Match: *` on a version 2 PUT creates only if absent. Else 412 `precondition-failed` and nothing changes. Evaluated after `If-Match` (RFC 9110 13.2.2), in the atomic operation that writes. */
                "if-none-match"?: string;
            };
            path: {
                id: number;
            };
            cookie?: never;
        };
        /** @description `application/json` or `application/vnd.books.v1+json` is version 1; `application/vnd.books.v2+json` (here or in Accept) is version 2. */
        requestBody: {
            content: {
                "application/json": components["schemas"]["AddressInput"];
                "application/vnd.books.v1+json": components["schemas"]["AddressInput"];
                "application/vnd.books.v2+json": components["schemas"]["AddressInput"];
            };
        };
        responses: {
            /** @description Updated */
            200: {
                headers: {
                    /** @description Strong validator of this version (If-Match, If-None-Match): opaque, made at each write, no other address's or version's. */
                    ETag?: string;
                    Vary?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Address"];
                    "application/vnd.books.v1+json": components["schemas"]["Address"];
                    "application/vnd.books.v2+json": components["schemas"]["Address"];
                };
            };
            /** @description Created (version 1: a generated id; version 2: the path id) */
            201: {
                headers: {
                    /** @description Strong validator of this version (If-Match, If-None-Match): opaque, made at each write, no other address's or version's. */
                    ETag?: string;
                    Vary?: string;
                    /** @description `/addresses/{id}` of the address. */
                    Location?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Address"];
                    "application/vnd.books.v1+json": components["schemas"]["Address"];
                    "application/vnd.books.v2+json": components["schemas"]["Address"];
                };
            };
            /** @description `invalid-body`, `invalid-field` or `invalid-parameter` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `not-acceptable` */
            406: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `id-taken` (version 2: an id allocated before, or too far above) */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `precondition-failed` */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload-too-large` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `unsupported-media-type` */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    deleteAddress: {
        parameters: {
            query?: never;
            header?: {
                /** @description Only act if the address still has one of these ETags, or exists for `*` (else 412 `precondition-failed`). */
                "if-match"?: string;
                /** @description Only act if the caller's address at this id has none of these ETags (weak comparison: `W/` is ignored), or, with `*`, if the caller has no address at this id: `If-None-Match: *` on a version 2 PUT creates only if absent. Else 412 `precondition-failed` and nothing changes. Evaluated after `If-Match` (RFC 9110 13.2.2), in the atomic operation that writes. */
                "if-none-match"?: string;
            };
            path: {
                id: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            204: {
                headers: {
                    [name: string]: unknown;
                };
                content?: never;
            };
            /** @description `invalid-parameter` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `address-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `precondition-failed` */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    patchAddress: {
        parameters: {
            query?: never;
            header?: {
                /** @description Only act if the address still has one of these ETags, or exists for `*` (else 412 `precondition-failed`). */
                "if-match"?: string;
                /** @description Only act if the caller's address at this id has none of these ETags (weak comparison: `W/` is ignored), or, with `*`, if the caller has no address at this id: `If-None-Match: *` on a version 2 PUT creates only if absent. Else 412 `precondition-failed` and nothing changes. Evaluated after `If-Match` (RFC 9110 13.2.2), in the atomic operation that writes. */
                "if-none-match"?: string;
            };
            path: {
                id: number;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/merge-patch+json": components["schemas"]["AddressMergePatch"];
            };
        };
        responses: {
            /** @description Updated */
            200: {
                headers: {
                    /** @description Strong validator of this version (If-Match, If-None-Match): opaque, made at each write, no other address's or version's. */
                    ETag?: string;
                    Vary?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Address"];
                    "application/vnd.books.v1+json": components["schemas"]["Address"];
                    "application/vnd.books.v2+json": components["schemas"]["Address"];
                };
            };
            /** @description `invalid-body`, `invalid-field` or `invalid-parameter` */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            401: components["responses"]["Unauthorized"];
            403: components["responses"]["Forbidden"];
            /** @description `address-not-found` */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `not-acceptable` */
            406: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `precondition-failed` */
            412: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `payload-too-large` */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            /** @description `unsupported-media-type` */
            415: {
                headers: {
                    "Accept-Patch"?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getLiveness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Alive */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Status"];
                };
            };
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getReadiness: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Status"];
                };
            };
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getOpenApiDocument: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The OpenAPI document */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, never>;
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getApiReference: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/html": string;
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getErrorReference: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The reference */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/markdown": string;
                };
            };
            401: components["responses"]["Unauthorized"];
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
    getEntryPoint: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Links; clients need to know only this URI. */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        _links: {
                            [key: string]: {
                                href: string;
                                title: string;
                                templated?: boolean;
                            };
                        };
                    };
                    "application/vnd.books.v1+json": {
                        _links: {
                            [key: string]: {
                                href: string;
                                title: string;
                                templated?: boolean;
                            };
                        };
                    };
                    "application/vnd.books.v2+json": {
                        _links: {
                            [key: string]: {
                                href: string;
                                title: string;
                                templated?: boolean;
                            };
                        };
                    };
                };
            };
            401: components["responses"]["Unauthorized"];
            /** @description `not-acceptable` */
            406: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Errors"];
                    "application/problem+json": components["schemas"]["Problem"];
                };
            };
            429: components["responses"]["RateLimited"];
            503: components["responses"]["ServiceUnavailable"];
        };
    };
}
