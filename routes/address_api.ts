import { createRoute, z } from "@hono/zod-openapi";
import { MERGE_PATCH_JSON } from "../lib/http/body.ts";
import { VENDOR_JSON, VENDOR_JSON_V2 } from "../lib/http/negotiate.ts";
import { routeAccess } from "../security/access.ts";
import { ADDRESS_ROUTE, ADDRESSES_PATH } from "../lib/paths.ts";
import {
  CACHED_HEADERS,
  CollectionConditionSchemas,
  IfMatchSchema,
  IfNoneMatchHeaderSchema,
  IfNoneMatchWriteSchema,
  jsonContent,
  NOT_MODIFIED,
  SCOPED_RESPONSES,
} from "../lib/http/openapi.ts";
import {
  AddressInputSchema,
  AddressPatchSchema,
  AddressSchema,
  fieldListText,
  MERGE_PATCH_NULL_RULE,
  V1_KEPT,
  V1_REPLACED,
} from "../lib/address.ts";
import {
  AddressListQuerySchema,
  AddressPageSchema,
  errorResponse,
  IdParamSchema,
} from "../lib/schemas.ts";
import { byReference } from "./json_body.ts";
import { IdempotencyKeySchema } from "../lib/idempotency_key.ts";

/** The routes of the address book as OpenAPI operations (validation and documentation). */

// Every type lib/http/body.ts JSON_BODY_TYPES names is declared, so the route's media-type gate
// accepts what the body guard accepted; the vendor types name the schema by reference
// (routes/json_body.ts).
const ADDRESS_INPUT_REF = byReference("AddressInput", AddressInputSchema);
const jsonBody = {
  required: true,
  description: `\`application/json\` or \`${VENDOR_JSON}\` is version 1; \`${VENDOR_JSON_V2}\` ` +
    "(here or in Accept) is version 2.",
  content: {
    "application/json": { schema: AddressInputSchema },
    [VENDOR_JSON]: { schema: ADDRESS_INPUT_REF },
    [VENDOR_JSON_V2]: { schema: ADDRESS_INPUT_REF },
  },
} as const;

/** The conditions of a write of one address (RFC 9110 13.1.1, 13.1.2; docs/http.md). */
const WriteConditionSchema = z.object({
  "if-match": IfMatchSchema,
  "if-none-match": IfNoneMatchWriteSchema,
});

/** The headers of POST /addresses. */
export const CreateHeaderSchema = z.object({
  "idempotency-key": IdempotencyKeySchema
    .optional()
    .openapi({
      param: { name: "idempotency-key", in: "header" },
      description: "Makes the POST safe to retry for 24 hours: the same key with the same body " +
        "replays the first response (status, body, Location, ETag; `Idempotent-Replayed: " +
        "true`) and creates nothing; with another body it is 422 `idempotency-key-reused`; " +
        "while the first is still running with another body, 409 `request-in-progress`. " +
        "Scoped to the caller.",
    }),
  ...CollectionConditionSchemas,
});

const addressResponse = (description: string) => ({
  description,
  headers: {
    ETag: {
      description: "Strong validator of this version (If-Match, If-None-Match): opaque, made " +
        "at each write, no other address's or version's.",
      schema: { type: "string" as const },
    },
    Vary: { schema: { type: "string" as const } },
  },
  content: jsonContent(AddressSchema),
});

const LOCATION = {
  description: "`/addresses/{id}` of the address.",
  schema: { type: "string" as const },
};

const unsupported = errorResponse("`unsupported-media-type`");
/** Any write: storage busy past the retry budget, or unable to take the write (Retry-After). */
/** POST /addresses */
export const createAddress = createRoute({
  ...routeAccess("addresses:write"),
  method: "post",
  path: ADDRESSES_PATH,
  operationId: "createAddress",
  tags: ["addresses"],
  summary: "Create an address (every request creates a new one, unless Idempotency-Key repeats)",
  description: "Stores the address for the caller with a newly generated id and answers it with " +
    "`Location` and `ETag`. Fields are trimmed; unknown members are ignored. With " +
    "`Idempotency-Key` a retried request replays the first answer instead of creating another " +
    "address. `If-None-Match: *` is 412 (the collection exists). Needs the scope " +
    "`addresses:write` when authentication is on.",
  request: { headers: CreateHeaderSchema, body: jsonBody },
  responses: {
    201: {
      ...addressResponse("Created (or replayed by Idempotency-Key)"),
      headers: {
        ...addressResponse("").headers,
        Location: LOCATION,
        "Idempotent-Replayed": {
          description: "`true` when the answer replays an earlier request with the same key.",
          schema: { type: "string" as const },
        },
      },
    },
    400: errorResponse("`invalid-body`, `invalid-field` or `invalid-parameter` (Idempotency-Key)"),
    406: errorResponse("`not-acceptable`"),
    409: errorResponse("`request-in-progress`"),
    412: errorResponse(
      "`precondition-failed`: `If-None-Match: *`, or an `If-Match` other than `*`",
    ),
    413: errorResponse("`payload-too-large`"),
    415: unsupported,
    422: errorResponse("`idempotency-key-reused`"),
    ...SCOPED_RESPONSES,
  },
});

/** GET /addresses */
export const listAddresses = createRoute({
  ...routeAccess("addresses:read"),
  method: "get",
  path: ADDRESSES_PATH,
  operationId: "listAddresses",
  tags: ["addresses"],
  summary: "List the caller's addresses by ascending id, one page at a time",
  description: "At most `limit` (default 50, at most 500) of the caller's addresses after " +
    "`cursor`, ascending id. `nextCursor` is the opaque cursor of the next page, `null` on the " +
    "last; `limit` may change from page to page. Needs the scope `addresses:read` when " +
    "authentication is on.",
  request: { query: AddressListQuerySchema },
  responses: {
    200: { description: "A page", content: jsonContent(AddressPageSchema) },
    400: errorResponse("`invalid-parameter`: limit or cursor"),
    406: errorResponse("`not-acceptable`"),
    ...SCOPED_RESPONSES,
  },
});

/** GET /addresses/{id} */
export const getAddress = createRoute({
  ...routeAccess("addresses:read"),
  method: "get",
  path: ADDRESS_ROUTE,
  operationId: "getAddress",
  tags: ["addresses"],
  summary: "Get one of the caller's addresses",
  description: "The address with a strong `ETag` (for `If-Match` on writes); `If-None-Match` " +
    "with that ETag answers 304. Another owner's address is not found (404). Needs the scope " +
    "`addresses:read` when authentication is on.",
  request: { params: IdParamSchema, headers: IfNoneMatchHeaderSchema },
  responses: {
    200: {
      ...addressResponse("The address"),
      headers: CACHED_HEADERS,
    },
    304: NOT_MODIFIED,
    400: errorResponse("`invalid-parameter`"),
    404: errorResponse("`address-not-found` (also another owner's address)"),
    406: errorResponse("`not-acceptable`"),
    ...SCOPED_RESPONSES,
  },
});

/** PUT /addresses/{id} */
export const putAddress = createRoute({
  ...routeAccess("addresses:write"),
  method: "put",
  path: ADDRESS_ROUTE,
  operationId: "putAddress",
  tags: ["addresses"],
  summary: `Version 1: replace ${fieldListText(V1_REPLACED, true)}, or create with a new id. ` +
    "Version 2: store at this id",
  description: "Version 1 (`application/json`): the caller's existing address gets " +
    `${fieldListText(V1_REPLACED)} from the body and keeps its ${fieldListText(V1_KEPT)} (200); ` +
    "otherwise (absent, or another owner's) the body is stored as a new address with a " +
    "generated id (201, Location of that id).\n\nVersion 2 " +
    `(\`${VENDOR_JSON_V2}\` in Content-Type or Accept, RFC 9110): the caller's existing ` +
    `address is replaced whole, ${fieldListText(V1_KEPT)} included (200); repeating the ` +
    "request leaves the same state. An id never allocated (above the id counter, by at most " +
    "1,000,000) is created at that id (201, Location of the path) and moves the counter. Any " +
    "other id is 409 `id-taken`, whether another owner holds it, it was deleted or it was " +
    "allocated and not used: ids are never reused, and the answer says nothing about other " +
    "owners.\n\n`If-Match` and `If-None-Match` are evaluated as RFC 9110 orders them, on the " +
    "caller's address at this id in the atomic operation that writes: `If-None-Match: *` " +
    "creates only if the caller has no address here (version 2: the standard create-if-absent), " +
    "and is 412 when it has one; `If-Match` on an id the caller does not hold is 412.\n\n" +
    "Needs the scope `addresses:write` when authentication is on.",
  request: { params: IdParamSchema, headers: WriteConditionSchema, body: jsonBody },
  responses: {
    200: addressResponse("Updated"),
    201: {
      ...addressResponse("Created (version 1: a generated id; version 2: the path id)"),
      headers: { ...addressResponse("").headers, Location: LOCATION },
    },
    400: errorResponse("`invalid-body`, `invalid-field` or `invalid-parameter`"),
    406: errorResponse("`not-acceptable`"),
    409: errorResponse("`id-taken` (version 2: an id allocated before, or too far above)"),
    412: errorResponse("`precondition-failed`"),
    413: errorResponse("`payload-too-large`"),
    415: unsupported,
    ...SCOPED_RESPONSES,
  },
});

/** PATCH /addresses/{id} */
export const patchAddress = createRoute({
  ...routeAccess("addresses:write"),
  method: "patch",
  path: ADDRESS_ROUTE,
  operationId: "patchAddress",
  tags: ["addresses"],
  summary: "Change some members of an address (JSON Merge Patch, RFC 7396)",
  description:
    `Only the members sent change; unknown members are ignored; ${MERGE_PATCH_NULL_RULE} ` +
    `Another Content-Type is 415 with \`Accept-Patch: ${MERGE_PATCH_JSON}\`. ` +
    "`If-None-Match` with the current ETag (or `*`) is 412 and changes nothing. Needs the " +
    "scope `addresses:write` when authentication is on.",
  request: {
    params: IdParamSchema,
    headers: WriteConditionSchema,
    body: { required: true, content: { [MERGE_PATCH_JSON]: { schema: AddressPatchSchema } } },
  },
  responses: {
    200: addressResponse("Updated"),
    400: errorResponse("`invalid-body`, `invalid-field` or `invalid-parameter`"),
    404: errorResponse("`address-not-found`"),
    406: errorResponse("`not-acceptable`"),
    412: errorResponse("`precondition-failed`"),
    413: errorResponse("`payload-too-large`"),
    415: {
      ...unsupported,
      headers: { "Accept-Patch": { schema: { type: "string" as const } } },
    },
    ...SCOPED_RESPONSES,
  },
});

/** DELETE /addresses/{id} */
export const deleteAddress = createRoute({
  ...routeAccess("addresses:write"),
  method: "delete",
  path: ADDRESS_ROUTE,
  operationId: "deleteAddress",
  tags: ["addresses"],
  summary: "Delete one of the caller's addresses",
  description: "Removes the address; its id is never handed out again. Another owner's address " +
    "is not found (404). `If-None-Match` with the current ETag (or `*`) is 412 and deletes " +
    "nothing. Needs the scope `addresses:write` when authentication is on.",
  request: { params: IdParamSchema, headers: WriteConditionSchema },
  responses: {
    204: { description: "Deleted" },
    400: errorResponse("`invalid-parameter`"),
    404: errorResponse("`address-not-found`"),
    412: errorResponse("`precondition-failed`"),
    ...SCOPED_RESPONSES,
  },
});
