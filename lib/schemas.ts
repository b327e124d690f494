import { z } from "@hono/zod-openapi";

/** An author of a book. */
export const AuthorSchema = z.object({
  firstName: z.string().min(1),
  lastName: z.string().min(1),
}).openapi("Author");

/** A book of the catalogue, as served by REST and read from the seed file. */
export const BookSchema = z.object({
  id: z.number().int().positive().openapi({ example: 1 }),
  title: z.string().min(1).openapi({ example: "Things Fall Apart" }),
  year: z.number().int().openapi({ example: 1958 }),
  author: AuthorSchema,
}).openapi("Book");

/** The seed file: a JSON array of books with unique ids. */
export const CatalogueSchema = z.array(BookSchema).refine(
  (books) => new Set(books.map((b) => b.id)).size === books.length,
  { message: "book ids must be unique" },
);

/** The body of POST /addresses and PUT /addresses/{id}; unknown members are ignored. */
export const AddressInputSchema = z.object({
  name: z.string().trim().min(1).max(200).openapi({ example: "Ada Lovelace" }),
  city: z.string().trim().min(1).max(200).openapi({ example: "London" }),
  postalCode: z.string().trim().min(1).max(20).regex(
    /^[\p{L}\p{N} -]+$/u,
    "may contain only letters, digits, spaces and hyphens",
  ).openapi({ example: "W1J 7NT" }),
}).openapi("AddressInput");

/** A stored address. */
export const AddressSchema = z.object({
  id: z.number().int().positive().openapi({ example: 1 }),
  name: z.string(),
  city: z.string(),
  postalCode: z.string(),
}).openapi("Address");

/** One page of addresses. */
export const AddressPageSchema = z.object({
  addresses: z.array(AddressSchema),
  nextCursor: z.string().nullable().openapi({
    description: "Opaque cursor for the next page; null on the last page.",
  }),
}).openapi("AddressPage");

/** A positive integer id in a path (`/api/book/{id}`, `/addresses/{id}`). */
/** A resource id as a path segment: a positive integer, canonical decimal, at most 16 digits. */
export const ID_PATTERN = /^[1-9][0-9]{0,15}$/;

export const IdParamSchema = z.object({
  id: z.string().regex(ID_PATTERN, "must be a positive integer")
    .transform(Number)
    .refine(Number.isSafeInteger, "must be a positive integer")
    .openapi({ param: { name: "id", in: "path" }, type: "integer", example: 1 }),
});

/** Query of GET /addresses. */
export const AddressListQuerySchema = z.object({
  limit: z.string().regex(/^[0-9]{1,4}$/, "must be an integer from 1 to 500")
    .transform(Number)
    .refine((n) => n >= 1 && n <= 500, "must be an integer from 1 to 500")
    .optional()
    .openapi({ param: { name: "limit", in: "query" }, type: "integer", example: 50 }),
  cursor: z.string().max(200).optional().openapi({ param: { name: "cursor", in: "query" } }),
});

/** Detailed error body (spec 7.4). */
export const ErrorBodySchema = z.object({
  errors: z.array(z.object({
    error: z.string().openapi({ example: "book-not-found" }),
    message: z.string(),
    detail: z.string(),
    // Relative unless PUBLIC_URL is set.
    help: z.string().optional().openapi({
      format: "uri-reference",
      example: "/docs/errors#book-not-found",
    }),
  })),
}).openapi("Errors");

/** An OpenAPI response entry whose body is the detailed error body. */
export function errorResponse(description: string) {
  return { description, content: { "application/json": { schema: ErrorBodySchema } } };
}

/** Address as stored, without its id. */
export type AddressInput = z.infer<typeof AddressInputSchema>;
/** A stored address. */
export type Address = z.infer<typeof AddressSchema>;
/** A catalogue book. */
export type Book = z.infer<typeof BookSchema>;
