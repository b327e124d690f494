import { z } from "zod";
import { AddressSchema } from "./address.ts";

// OpenAPI metadata is zod's own `.meta()` here and in lib/address.ts (zod-to-openapi reads it; an
// `id` names the component): the gRPC child validates with these schemas and so loads zod alone,
// not @hono/zod-openapi and its generator. zod gives `.openapi()` only to schemas made after
// @hono/zod-openapi has loaded, so the REST side documents these with `.meta()` or a copy.

/** An author of a book. */
const AuthorSchema = z.object({
  firstName: z.string().min(1),
  lastName: z.string().min(1),
}).meta({ id: "Author" });

/** A book of the catalogue, as served by REST and read from the seed file. */
export const BookSchema = z.object({
  id: z.number().int().positive().meta({ example: 1 }),
  title: z.string().min(1).meta({ example: "Things Fall Apart" }),
  year: z.number().int().meta({ example: 1958 }),
  author: AuthorSchema,
}).meta({ id: "Book" });

/** The seed file: a JSON array of books with unique ids. */
export const CatalogueSchema = z.array(BookSchema).refine(
  (books) => new Set(books.map((b) => b.id)).size === books.length,
  { message: "book ids must be unique" },
);

/** One page of addresses. */
export const AddressPageSchema = z.object({
  addresses: z.array(AddressSchema),
  nextCursor: z.string().nullable().meta({
    description: "Opaque cursor for the next page; null on the last page.",
  }),
}).meta({ id: "AddressPage" });

/** A positive integer id in a path (`/api/book/{id}`, `/addresses/{id}`). */
/** A resource id as a path segment: a positive integer, canonical decimal, at most 16 digits. */
export const ID_PATTERN = /^[1-9][0-9]{0,15}$/;

export const IdParamSchema = z.object({
  id: z.string().regex(ID_PATTERN, "must be a positive integer")
    .transform(Number)
    .refine(Number.isSafeInteger, "must be a positive integer")
    .meta({
      param: { name: "id", in: "path" },
      type: "integer",
      minimum: 1,
      maximum: Number.MAX_SAFE_INTEGER,
      example: 1,
    }),
});

/** A listing's page size: when none is asked for, and the most one may ask for. */
export const PAGE_SIZE = { default: 50, max: 500 } as const;
const PAGE_SIZE_RULE = `must be an integer from 1 to ${PAGE_SIZE.max}`;

/** True for a page size a listing accepts. */
export function isPageSize(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && n <= PAGE_SIZE.max;
}

/** Query of GET /addresses. */
export const AddressListQuerySchema = z.object({
  limit: z.string().regex(/^[0-9]{1,4}$/, PAGE_SIZE_RULE)
    .transform(Number)
    .refine(isPageSize, PAGE_SIZE_RULE)
    .optional()
    .meta({
      param: { name: "limit", in: "query" },
      type: "integer",
      example: PAGE_SIZE.default,
    }),
  cursor: z.string().max(200).optional().meta({
    param: { name: "cursor", in: "query" },
    description: "A `nextCursor` of an earlier page, opaque. It is the caller's: one another " +
      "owner holds, an edited one, or one of another server's storage is 400 " +
      "`invalid-parameter`.",
  }),
});

/** Detailed error body (docs/errors.md, The bodies). */
export const ErrorBodySchema = z.object({
  errors: z.array(z.object({
    error: z.string().meta({ example: "book-not-found" }),
    message: z.string(),
    detail: z.string(),
    help: z.string().optional().meta({
      format: "uri-reference",
      description: "The entry of the error code in the error reference (`/docs/errors#<code>`).",
      example: "/docs/errors#book-not-found",
    }),
  })),
}).meta({ id: "Errors" });

/** RFC 7807 problem details, answered to `Accept: application/problem+json`. */
export const ProblemSchema = z.object({
  type: z.string().meta({
    format: "uri-reference",
    description: "The error code's entry in the error reference.",
    example: "/docs/errors#book-not-found",
  }),
  title: z.string().meta({ example: "The book was not found." }),
  status: z.number().int().meta({ example: 404 }),
  detail: z.string().meta({ example: "No book has id 99999." }),
  instance: z.string().meta({
    format: "uri-reference",
    description: "The path and the request id of this occurrence.",
    example: "/api/book/99999#request-5b0c1f8e-0a43-4c53-9d0b-0f6f7d2a4f11",
  }),
  errors: z.array(z.object({ error: z.string(), detail: z.string() })).meta({
    description: "Every problem of the request (the first one is `type` and `detail`).",
  }),
}).meta({ id: "Problem" });

/** The media type of RFC 7807 problem details. */
export const PROBLEM_JSON = "application/problem+json";

/**
 * An OpenAPI response entry of an error: the detailed body by default, RFC 7807 problem details
 * to `Accept: application/problem+json` (server/render_error.ts).
 */
export function errorResponse(description: string) {
  return {
    description,
    content: {
      "application/json": { schema: ErrorBodySchema },
      [PROBLEM_JSON]: { schema: ProblemSchema },
    },
  };
}

/** A catalogue book. */
export type Book = z.infer<typeof BookSchema>;
