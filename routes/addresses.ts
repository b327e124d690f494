import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { AppError } from "../lib/errors.ts";
import {
  AddressInputSchema,
  AddressListQuerySchema,
  AddressPageSchema,
  AddressSchema,
  errorResponse,
  IdParamSchema,
} from "../lib/schemas.ts";
import type { AddressStore, StoredAddress } from "../store/addresses.ts";
import { type AppEnv, preEncoded } from "../lib/app_env.ts";
import { negotiateJson, VENDOR_JSON } from "../lib/negotiate.ts";

// Every type lib/body.ts JSON_BODY_TYPES names is declared, so the route's media-type gate
// accepts what the edge's JSON guard accepted.
const jsonBody = {
  required: true,
  content: {
    "application/json": { schema: AddressInputSchema },
    [VENDOR_JSON]: { schema: AddressInputSchema },
  },
} as const;

const IfMatchHeaderSchema = z.object({
  "if-match": z.string().max(1000).optional().openapi({
    param: { name: "if-match", in: "header" },
    description: "Only act if the address still has this ETag (else 412).",
  }),
});

const addressResponse = (description: string) => ({
  description,
  headers: { ETag: { schema: { type: "string" as const } } },
  content: { "application/json": { schema: AddressSchema } },
});

const createAddress = createRoute({
  method: "post",
  path: "/addresses",
  summary: "Create an address (every request creates a new one)",
  request: { body: jsonBody },
  responses: {
    201: {
      ...addressResponse("Created"),
      headers: {
        Location: { schema: { type: "string" } },
        ETag: { schema: { type: "string" } },
      },
    },
    400: errorResponse("`invalid-body` or `invalid-field`"),
    413: errorResponse("`payload-too-large`"),
    415: errorResponse("`unsupported-media-type`"),
    503: errorResponse("`service-unavailable`"),
  },
});

const listAddresses = createRoute({
  method: "get",
  path: "/addresses",
  summary: "List addresses by ascending id, one page at a time",
  request: { query: AddressListQuerySchema },
  responses: {
    200: { description: "A page", content: { "application/json": { schema: AddressPageSchema } } },
    400: errorResponse("`invalid-parameter`: limit or cursor"),
  },
});

const getAddress = createRoute({
  method: "get",
  path: "/addresses/{id}",
  summary: "Get one address",
  request: { params: IdParamSchema },
  responses: {
    200: addressResponse("The address"),
    400: errorResponse("`invalid-parameter`"),
    404: errorResponse("`address-not-found`"),
  },
});

const putAddress = createRoute({
  method: "put",
  path: "/addresses/{id}",
  summary: "Replace city and postal code of an address, or create it with a new id",
  description: "Spec 4.6: an existing address gets city and postalCode from the body and keeps " +
    "its name (200). When none exists, the body is stored as a new address with a generated " +
    "id, not the path id (201 with Location).",
  request: { params: IdParamSchema, headers: IfMatchHeaderSchema, body: jsonBody },
  responses: {
    200: addressResponse("Updated"),
    201: {
      ...addressResponse("Created with a generated id"),
      headers: {
        Location: { schema: { type: "string" } },
        ETag: { schema: { type: "string" } },
      },
    },
    400: errorResponse("`invalid-body`, `invalid-field` or `invalid-parameter`"),
    412: errorResponse("`precondition-failed`"),
    413: errorResponse("`payload-too-large`"),
    415: errorResponse("`unsupported-media-type`"),
  },
});

const deleteAddress = createRoute({
  method: "delete",
  path: "/addresses/{id}",
  summary: "Delete an address",
  request: { params: IdParamSchema, headers: IfMatchHeaderSchema },
  responses: {
    204: { description: "Deleted" },
    400: errorResponse("`invalid-parameter`"),
    404: errorResponse("`address-not-found`"),
    412: errorResponse("`precondition-failed`"),
  },
});

/** Strong ETag of a stored address: its KV versionstamp. */
export function etagOf(stored: StoredAddress): string {
  return `"${stored.versionstamp}"`;
}

/** Parses If-Match into versionstamps (`*` kept); undefined when the header is absent. */
export function parseIfMatch(header: string | undefined): string[] | undefined {
  if (header === undefined) return undefined;
  return header.split(",").map((t) => t.trim().replace(/^W\//, "").replace(/^"(.*)"$/, "$1"))
    .filter((t) => t.length > 0);
}

function addressJson(stored: StoredAddress, status: number, type: string, extra = {}): Response {
  return new Response(JSON.stringify(stored.address), {
    status,
    headers: { "content-type": type, "etag": etagOf(stored), "vary": "Accept", ...extra },
  });
}

/** REST routes of the address book. */
export function addressRoutes(addresses: AddressStore, app: OpenAPIHono<AppEnv>): void {
  app.openapi(createAddress, async (c) => {
    const type = negotiateJson(c.req.header("accept"));
    const stored = await addresses.create(c.get("caller").owner, c.req.valid("json"));
    return preEncoded(
      addressJson(stored, 201, type, { location: `/addresses/${stored.address.id}` }),
    );
  });

  app.openapi(listAddresses, async (c) => {
    const type = negotiateJson(c.req.header("accept"));
    const { limit, cursor } = c.req.valid("query");
    const page = await addresses.list(c.get("caller").owner, { limit: limit ?? 50, cursor });
    const body = { addresses: page.items.map((s) => s.address), nextCursor: page.nextCursor };
    return preEncoded(
      new Response(JSON.stringify(body), { headers: { "content-type": type, "vary": "Accept" } }),
    );
  });

  app.openapi(getAddress, async (c) => {
    const type = negotiateJson(c.req.header("accept"));
    const { id } = c.req.valid("param");
    const stored = await addresses.get(c.get("caller").owner, id);
    if (!stored) throw new AppError("address-not-found", `No address has id ${id}.`);
    return preEncoded(addressJson(stored, 200, type));
  });

  app.openapi(putAddress, async (c) => {
    const type = negotiateJson(c.req.header("accept"));
    const { id } = c.req.valid("param");
    const ifMatch = parseIfMatch(c.req.valid("header")["if-match"]);
    const stored = await addresses.put(c.get("caller").owner, id, c.req.valid("json"), ifMatch);
    if (stored.created) {
      return preEncoded(
        addressJson(stored, 201, type, { location: `/addresses/${stored.address.id}` }),
      );
    }
    return preEncoded(addressJson(stored, 200, type));
  });

  app.openapi(deleteAddress, async (c) => {
    const { id } = c.req.valid("param");
    await addresses.delete(
      c.get("caller").owner,
      id,
      parseIfMatch(c.req.valid("header")["if-match"]),
    );
    return preEncoded(new Response(null, { status: 204 }));
  });
}
