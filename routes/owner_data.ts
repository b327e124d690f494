import { createRoute, type OpenAPIHono, z } from "@hono/zod-openapi";
import { ADDRESS_CACHE_CONTROL } from "../lib/http/conditional.ts";
import { AppError } from "../lib/errors.ts";
import { collectionCondition } from "../lib/http/etag.ts";
import { preferredMediaType } from "../lib/http/accept.ts";
import { jsonAnswer } from "../lib/http/negotiate.ts";
import {
  CollectionConditionSchemas,
  IfMatchSchema,
  SCOPED_RESPONSES,
} from "../lib/http/openapi.ts";
import { type Address, AddressSchema, EXAMPLE_ADDRESS } from "../lib/address.ts";
import { errorResponse } from "../lib/schemas.ts";
import { type AppEnv, preEncoded } from "../lib/http/hono_env.ts";
import type { AddressStore } from "../store/addresses/repository.ts";
import { routeAccess } from "../security/access.ts";
import { ADDRESSES_EXPORT_PATH, ADDRESSES_PATH } from "../lib/paths.ts";

/** The per-owner data routes: take one's addresses elsewhere, or have them erased. */

/** NDJSON: one JSON value per line (the export's default). */
export const NDJSON = "application/x-ndjson";

/** The JSON form of an export. */
const AddressExportSchema = z.object({
  addresses: z.array(AddressSchema),
}).openapi("AddressExport");

/** GET /addresses/export */
const exportAddresses = createRoute({
  ...routeAccess("addresses:read"),
  method: "get",
  path: ADDRESSES_EXPORT_PATH,
  operationId: "exportAddresses",
  tags: ["addresses"],
  summary: "Export all the caller's addresses",
  description: "Streams every address of the caller by ascending id. By default (or with " +
    `\`Accept: ${NDJSON}\`) as NDJSON, one address per line; with \`Accept: application/json\` ` +
    "as one JSON object `{addresses: [...]}`. An address stored before the request and not " +
    "deleted during it is always included. Needs the scope `addresses:read`.",
  responses: {
    200: {
      description: "The caller's addresses",
      headers: {
        "Content-Disposition": {
          description: "`attachment` with a file name.",
          schema: { type: "string" as const },
        },
        Vary: { schema: { type: "string" as const } },
      },
      content: {
        [NDJSON]: {
          schema: AddressSchema,
          // The schema and example of one line.
          example: EXAMPLE_ADDRESS,
        },
        "application/json": { schema: AddressExportSchema },
      },
    },
    406: errorResponse("`not-acceptable`"),
    ...SCOPED_RESPONSES,
  },
});

/** DELETE /addresses */
const eraseAddresses = createRoute({
  ...routeAccess("addresses:write"),
  method: "delete",
  path: ADDRESSES_PATH,
  operationId: "eraseAddresses",
  tags: ["addresses"],
  summary: "Erase all the caller's addresses",
  description: "Deletes every address of the caller and the caller's Idempotency-Key records, " +
    "in batches (each batch atomic). `If-Match: *` confirms it; without If-Match the answer is " +
    "428 `precondition-required` and nothing is deleted. Repeating it answers 204 again. " +
    "Needs the scope `addresses:write`.",
  request: {
    headers: z.object({
      "if-match": IfMatchSchema.meta({
        param: { name: "if-match", in: "header" },
        description: "`*` to confirm (the collection has no other ETag: any other value is " +
          "412 `precondition-failed`).",
      }),
      "if-none-match": CollectionConditionSchemas["if-none-match"],
    }),
  },
  responses: {
    204: { description: "Erased (or there was nothing to erase)" },
    412: errorResponse("`precondition-failed`: If-Match other than `*`, or If-None-Match: `*`"),
    428: errorResponse("`precondition-required`: no If-Match"),
    ...SCOPED_RESPONSES,
  },
});

// Named alike, or through a wildcard, NDJSON: the export's own form.
const EXPORT_TYPES = [NDJSON, "application/json"] as const;

/** Which form `Accept` asks for (lib/http/accept.ts); undefined when neither is acceptable. */
export function exportType(accept: string | undefined): "ndjson" | "json" | undefined {
  const type = preferredMediaType(accept, EXPORT_TYPES, NDJSON);
  return type === undefined ? undefined : type === NDJSON ? "ndjson" : "json";
}

/** Streams the export: the first page was read before the answer began. */
function exportStream(
  first: IteratorResult<Address, void>,
  rest: AsyncGenerator<Address, void, undefined>,
  form: "ndjson" | "json",
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder();
  let pending: IteratorResult<Address, void> | undefined = first;
  let count = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let text = count === 0 && form === "json" ? '{"addresses":[' : "";
      // About 100 addresses per chunk: fewer, larger writes.
      for (let n = 0; n < 100; n++) {
        const next: IteratorResult<Address, void> = pending ?? await rest.next();
        pending = undefined;
        if (next.done) {
          if (form === "json") text += "]}";
          if (text) controller.enqueue(encoder.encode(text));
          controller.close();
          return;
        }
        const json = JSON.stringify(next.value);
        text += form === "ndjson" ? `${json}\n` : count === 0 ? json : `,${json}`;
        count++;
      }
      controller.enqueue(encoder.encode(text));
    },
    async cancel() {
      await rest.return();
    },
  });
}

/** Registers the routes; before the address routes, so `/addresses/export` is not an id. */
export function ownerDataRoutes(addresses: AddressStore, app: OpenAPIHono<AppEnv>): void {
  app.openapi(exportAddresses, async (c) => {
    const form = exportType(c.req.header("accept"));
    if (form === undefined) {
      throw new AppError(
        "not-acceptable",
        `The export is available as ${NDJSON} or application/json; Accept was ` +
          `${c.req.header("accept")?.slice(0, 100)}.`,
      );
    }
    const addressesOf = addresses.exportAll(c.get("caller").owner);
    // A storage failure before the first byte is an error answer, not a cut-off stream.
    const first = await addressesOf.next();
    const type = form === "ndjson" ? NDJSON : "application/json";
    return preEncoded(
      jsonAnswer(exportStream(first, addressesOf, form), {
        type,
        requestId: c.get("requestId"),
        headers: {
          "cache-control": ADDRESS_CACHE_CONTROL,
          "content-disposition": `attachment; filename="addresses.${
            form === "ndjson" ? "ndjson" : "json"
          }"`,
        },
      }),
    );
  });

  app.openapi(eraseAddresses, async (c) => {
    const { "if-match": ifMatch, "if-none-match": ifNoneMatch } = c.req.valid("header");
    if (ifMatch === undefined) {
      throw new AppError(
        "precondition-required",
        "Erasing all addresses needs the confirmation If-Match: *.",
      );
    }
    // The collection has no ETag of its own: only `*` matches it (RFC 9110 13.2.2 order).
    const failed = collectionCondition(ifMatch, ifNoneMatch);
    if (failed !== undefined) {
      throw new AppError(
        "precondition-failed",
        failed === "If-Match"
          ? "The address collection has no ETag; If-Match: * confirms the erasure."
          : "The address collection exists: If-None-Match: * does not hold.",
      );
    }
    await addresses.erase(c.get("caller").owner);
    return preEncoded(new Response(null, { status: 204 }));
  });
}
