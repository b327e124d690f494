import type { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { ADDRESS_CACHE_CONTROL, conditionalJson } from "../lib/http/conditional.ts";
import { AppError } from "../lib/errors.ts";
import { collectionCondition, writePrecondition } from "../lib/http/etag.ts";
import {
  addressResponseType,
  isVersion2,
  jsonAnswer,
  negotiateJson,
} from "../lib/http/negotiate.ts";
import { type Address, mergePatch } from "../lib/address.ts";
import type { AddressStore, StoredAddress } from "../store/addresses/repository.ts";
import { type AppEnv, preEncoded } from "../lib/http/hono_env.ts";
import { invalidInput } from "../lib/http/invalid_input.ts";
import { bodyValidatedOnly } from "./json_body.ts";
import { pageAnswer } from "./address_page.ts";
import {
  createAddress,
  CreateHeaderSchema,
  deleteAddress,
  getAddress,
  listAddresses,
  patchAddress,
  putAddress,
} from "./address_api.ts";

function addressJson(
  c: Context<AppEnv>,
  stored: StoredAddress,
  status: number,
  type: string,
  extra = {},
): Response {
  return jsonAnswer(JSON.stringify(stored.address), {
    status,
    type,
    requestId: c.get("requestId"),
    headers: { "etag": stored.etag, ...extra },
  });
}

/**
 * The answer to `GET /addresses/{id}` of an address the caller holds: 200 with its ETag, or 304
 * when `If-None-Match` matches.
 */
function addressAnswer(
  stored: StoredAddress,
  request: { type: string; requestId: string; ifNoneMatch: string | null | undefined },
): Response {
  return conditionalJson(JSON.stringify(stored.address), {
    type: request.type,
    etag: stored.etag,
    cacheControl: ADDRESS_CACHE_CONTROL,
    requestId: request.requestId,
    ifNoneMatch: request.ifNoneMatch,
  });
}

function created(c: Context<AppEnv>, stored: StoredAddress, type: string, extra = {}): Response {
  const location = `/addresses/${stored.address.id}`;
  return addressJson(c, stored, 201, type, { location, ...extra });
}

/** The response type of an address write: v2 when the request is v2 (lib/http/negotiate.ts). */
function writeType(c: Context<AppEnv>): string {
  return addressResponseType(c.req.header("accept"), c.req.header("content-type"));
}

/**
 * The headers of a POST to the collection, checked by their documented schema (400 like any
 * header) after the body (routes/json_body.ts `bodyValidatedOnly`).
 */
function createHeaders(c: Context<AppEnv>) {
  const parsed = CreateHeaderSchema.safeParse({
    "idempotency-key": c.req.header("idempotency-key"),
    "if-match": c.req.header("if-match"),
    "if-none-match": c.req.header("if-none-match"),
  });
  if (!parsed.success) throw invalidInput("header", parsed.error.issues);
  return parsed.data;
}

/**
 * The conditions of a POST to the collection (RFC 9110 13.2.2): the collection always exists
 * and has no ETag.
 */
function checkCollectionConditions(ifMatch: string | undefined, ifNoneMatch: string | undefined) {
  const failed = collectionCondition(ifMatch, ifNoneMatch);
  if (failed === undefined) return;
  throw new AppError(
    "precondition-failed",
    failed === "If-Match"
      ? "The address collection has no ETag; only If-Match: * holds."
      : "The address collection exists: If-None-Match: * does not hold.",
  );
}

/** The precondition of a write of one address, from its validated headers. */
function preconditionOf(header: { "if-match"?: string; "if-none-match"?: string }) {
  return writePrecondition(header["if-match"], header["if-none-match"]);
}

/**
 * REST routes of the address book. Every call acts for the caller's owner (security/caller.ts);
 * bodies and parameters are checked against the routes' schemas before a handler runs
 * (server/operations.ts), but a create's headers, which its handler checks after the body.
 */
export function addressRoutes(addresses: AddressStore, app: OpenAPIHono<AppEnv>): void {
  app.openapi(bodyValidatedOnly(app.openAPIRegistry, createAddress), async (c) => {
    const type = writeType(c);
    const header = createHeaders(c);
    const key = header["idempotency-key"];
    checkCollectionConditions(header["if-match"], header["if-none-match"]);
    const stored = await addresses.create(c.get("caller").owner, c.req.valid("json"), key);
    return preEncoded(
      created(c, stored, type, stored.replayed ? { "idempotent-replayed": "true" } : {}),
    );
  });

  app.openapi(listAddresses, async (c) => {
    const type = negotiateJson(c.req.header("accept"));
    const { limit, cursor } = c.req.valid("query");
    return preEncoded(
      await pageAnswer(addresses, c.get("caller").owner, { limit, cursor }, {
        type,
        requestId: c.get("requestId"),
      }),
    );
  });

  app.openapi(getAddress, async (c) => {
    const type = negotiateJson(c.req.header("accept"));
    const { id } = c.req.valid("param");
    const stored = await addresses.get(c.get("caller").owner, id);
    if (!stored) throw new AppError("address-not-found", `No address has id ${id}.`);
    return preEncoded(addressAnswer(stored, {
      type,
      requestId: c.get("requestId"),
      ifNoneMatch: c.req.valid("header")["if-none-match"],
    }));
  });

  app.openapi(putAddress, async (c) => {
    const type = writeType(c);
    const { id } = c.req.valid("param");
    const expected = preconditionOf(c.req.valid("header"));
    const owner = c.get("caller").owner;
    const input = c.req.valid("json");
    const v2 = isVersion2(c.req.header("accept"), c.req.header("content-type"));
    const stored = v2
      ? await addresses.putAt(owner, id, input, expected)
      : await addresses.put(owner, id, input, expected);
    return preEncoded(
      stored.created ? created(c, stored, type) : addressJson(c, stored, 200, type),
    );
  });

  app.openapi(patchAddress, async (c) => {
    const type = negotiateJson(c.req.header("accept"));
    const { id } = c.req.valid("param");
    const patch = c.req.valid("json");
    const change = (current: Address) => mergePatch(current, patch);
    const expected = preconditionOf(c.req.valid("header"));
    const stored = await addresses.patch(c.get("caller").owner, id, change, expected);
    return preEncoded(addressJson(c, stored, 200, type));
  });

  app.openapi(deleteAddress, async (c) => {
    const { id } = c.req.valid("param");
    const expected = preconditionOf(c.req.valid("header"));
    await addresses.delete(c.get("caller").owner, id, expected);
    return preEncoded(new Response(null, { status: 204 }));
  });
}
