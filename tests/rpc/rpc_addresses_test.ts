/**
 * addresses.v1.AddressService over sockets: every method over gRPC, gRPC-Web and Connect on both
 * ports (Connect-ES), and with @grpc/grpc-js built from the .proto and from server reflection;
 * each answer checked against what REST then says of the same address (body and ETag). Errors,
 * auth and the REST comparison of bad input: rpc_address_errors_test.ts.
 */
import assert from "node:assert/strict";
import { fromBinary } from "@bufbuild/protobuf";
import { FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import * as protoLoader from "@grpc/proto-loader";
import {
  type Address as RestAddress,
  ADDRESS_FIELD_NAMES,
  type AddressInput,
  mergePatch,
  replaceV1,
} from "../../lib/address.ts";
import type { Address } from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import { schemaByReflection } from "../../rpc/examples/grpc_js_client.ts";
import { REPLAYED_HEADER } from "../../rpc/connect/address_service.ts";
import { type AddressBook, addressBook, taggedInput } from "../support/requests.ts";
import {
  addressClient,
  connectTransport,
  errorInfo,
  everyTransport,
  grpcJsClient,
  grpcJsErrorInfo,
  grpcJsUnary,
  grpcWebTransport,
  protoDefinition,
  rpcFailure,
} from "../support/rpc_clients.ts";
import { serveMain } from "../support/served.ts";
import { spawnServer, startTestServer } from "../support/server.ts";
import { waitFor } from "../support/process.ts";

/** An answered address as REST shows it: a number id, its fields, no etag. */
function restShape(message: Address): RestAddress {
  const fields = message as unknown as Record<string, string>;
  const address: Record<string, unknown> = { id: Number(message.id) };
  for (const name of ADDRESS_FIELD_NAMES) if (fields[name] !== "") address[name] = fields[name];
  return address as RestAddress;
}

/** REST reads the address exactly as the RPC answered it, with the same ETag. */
async function assertSameAsRest(rest: AddressBook, message: Address): Promise<void> {
  const res = await rest.get(Number(message.id));
  assert.equal(res.status, 200);
  assert.equal(res.headers.get("etag"), message.etag);
  assert.deepEqual(await res.json(), restShape(message));
}

/** Every method once, as one client of `transport` would use them; `tag` keeps inputs apart. */
async function everyMethod(
  client: ReturnType<typeof addressClient>,
  rest: AddressBook,
  tag: string,
): Promise<void> {
  const input = taggedInput(`${tag}a`);
  const created = await client.createAddress({ address: input });
  assert.ok(created.id > 0n);
  assert.match(created.etag, /^"[A-Za-z0-9_-]{22}"$/);
  assert.deepEqual(restShape(created), { id: Number(created.id), ...input });
  await assertSameAsRest(rest, created);
  assert.deepEqual(await client.getAddress({ id: created.id }), created);

  // Version 1 PUT: the existing address keeps its name, takes the rest.
  const other = taggedInput(`${tag}b`);
  const replaced = await client.replaceAddress({
    id: created.id,
    address: other,
    etag: created.etag,
  });
  assert.deepEqual(restShape(replaced), replaceV1(restShape(created), other));
  assert.notEqual(replaced.etag, created.etag);
  await assertSameAsRest(rest, replaced);

  // A field mask in proto names, the fields set, and `*`.
  let current = replaced;
  const updates: [string[] | undefined, Partial<AddressInput>, Partial<AddressInput>][] = [
    [["postal_code"], { postalCode: "75001", name: "not in the mask" }, { postalCode: "75001" }],
    [undefined, { city: `Paris ${tag}` }, { city: `Paris ${tag}` }],
    [["*"], input, input],
  ];
  for (const [paths, address, patch] of updates) {
    const updated = await client.updateAddress({
      id: current.id,
      address,
      ...(paths && { updateMask: { paths } }),
      etag: current.etag,
    });
    assert.deepEqual(
      restShape(updated),
      { id: Number(current.id), ...mergePatch(restShape(current), patch) },
      String(paths),
    );
    await assertSameAsRest(rest, updated);
    current = updated;
  }

  // A page at a time, ascending id: what REST lists, without the etags.
  await client.createAddress({ address: other });
  const listed: RestAddress[] = [];
  let pageToken = "";
  do {
    const page = await client.listAddresses({ pageSize: 2, pageToken });
    assert.ok(page.addresses.length <= 2);
    listed.push(...page.addresses.map(restShape));
    pageToken = page.nextPageToken;
  } while (pageToken !== "");
  assert.deepEqual(listed, await rest.listAll());

  assert.deepEqual(await client.deleteAddress({ id: current.id, etag: current.etag }), {
    $typeName: "google.protobuf.Empty",
  });
  assert.equal((await rest.get(Number(current.id))).status, 404);
  const gone = await rpcFailure(client.getAddress({ id: current.id }));
  assert.equal(gone.code, Code.NotFound);
  assert.equal(errorInfo(gone)?.reason, "address-not-found");

  // An id that is not the caller's (here: deleted) is created anew, with a generated id.
  const recreated = await client.replaceAddress({ id: current.id, address: other });
  assert.ok(recreated.id > current.id);
  await assertSameAsRest(rest, recreated);

  // request_id: a retry answers the first creation again, and says so.
  const headers: (Headers | undefined)[] = [];
  const first = await client.createAddress(
    { address: input, requestId: `key-${tag}` },
    { onHeader: (h) => headers.push(h) },
  );
  const again = await client.createAddress(
    { address: input, requestId: `key-${tag}` },
    { onHeader: (h) => headers.push(h) },
  );
  assert.deepEqual(again, first);
  assert.deepEqual(headers.map((h) => h?.get(REPLAYED_HEADER) ?? null), [null, "true"]);
}

Deno.test("AddressService: every method over every protocol and port, as REST sees it", async (t) => {
  const server = await startTestServer();
  const rest = addressBook(server.httpUrl);
  try {
    for (const [name, transport] of everyTransport(server)) {
      const tag = name.replace(/[^A-Za-z0-9]+/g, "-").slice(0, 16);
      await t.step(name, () => everyMethod(addressClient(transport), rest, tag));
    }
  } finally {
    await server.close();
  }
});

// deno-lint-ignore no-explicit-any
type Loaded = any;

Deno.test("@grpc/grpc-js calls AddressService from the .proto and from server reflection", async (t) => {
  const server = await startTestServer();
  const rest = addressBook(server.httpUrl);
  const options = { keepCase: true, longs: String, defaults: true };
  const definitions: [string, protoLoader.PackageDefinition][] = [
    ["addresses.proto", protoDefinition("addresses/v1/addresses.proto", options)],
    [
      "reflection",
      protoLoader.loadFileDescriptorSetFromBuffer(
        await schemaByReflection(new URL(server.grpcUrl!).host, "addresses.v1.AddressService"),
        options,
      ),
    ],
  ];
  try {
    await t.step("reflection also describes the error details a status carries", async () => {
      const set = fromBinary(
        FileDescriptorSetSchema,
        await schemaByReflection(new URL(server.grpcUrl!).host, "google.rpc.ErrorInfo"),
      );
      assert.equal(set.file[0]?.name, "google/rpc/error_details.proto");
      assert.ok(set.file[0]?.messageType.some((m) => m.name === "BadRequest"));
    });

    for (const [from, definition] of definitions) {
      await t.step(`schema from ${from}`, async () => {
        using client = grpcJsClient(server.grpcUrl!, {
          definition,
          service: ["addresses", "v1", "AddressService"],
        });
        const call = <T = Loaded>(method: string, request: object) =>
          grpcJsUnary<T>(client, method, request);
        const address = { name: "Grace Hopper", city: "Arlington", postal_code: "22201" };
        const created = await call("CreateAddress", { address, request_id: `grpc-js-${from}` });
        assert.ifError(created.error);
        const id = created.response.id;
        assert.match(id, /^[1-9][0-9]*$/);
        const read = await rest.get(id);
        assert.equal(read.headers.get("etag"), created.response.etag);
        assert.deepEqual(await read.json(), {
          id: Number(id),
          name: "Grace Hopper",
          city: "Arlington",
          postalCode: "22201",
        });

        const updated = await call("UpdateAddress", {
          id,
          address: { postal_code: "22202" },
          update_mask: { paths: ["postal_code"] },
          etag: created.response.etag,
        });
        assert.ifError(updated.error);
        assert.equal(updated.response.postal_code, "22202");
        const replaced = await call("ReplaceAddress", {
          id,
          address: { ...address, name: "kept as stored", city: "Washington" },
        });
        assert.deepEqual(
          [replaced.response.name, replaced.response.city],
          ["Grace Hopper", "Washington"],
        );
        const page = await call("ListAddresses", { page_size: 500 });
        assert.ok(page.response.addresses.some((a: Loaded) => a.id === id));
        assert.equal(page.response.next_page_token, "");

        const stale = await call("DeleteAddress", { id, etag: created.response.etag });
        assert.equal(stale.code, Code.Aborted);
        assert.equal(grpcJsErrorInfo(stale)?.reason, "precondition-failed");
        assert.equal(stale.metadata?.get("error-code")[0], "precondition-failed");
        assert.ifError((await call("DeleteAddress", { id })).error);
        const gone = await call("GetAddress", { id });
        assert.equal(gone.code, Code.NotFound);
        assert.equal(grpcJsErrorInfo(gone)?.reason, "address-not-found");
      });
    }
  } finally {
    await server.close();
  }
});

Deno.test("KV_PATH=:memory: serves AddressService from the HTTP process, and says so", async () => {
  const server = await spawnServer({ KV_PATH: ":memory:" });
  try {
    const line = await waitFor(
      "the warning",
      () => server.lines().find((l) => l.msg === "grpc listener runs in this process"),
    );
    assert.equal(line.level, "warn");
    assert.equal(server.lines().filter((l) => l.msg === "grpc listening").length, 0);
    const rest = addressBook(server.httpUrl);
    const [grpc, connect] = everyTransport(server).map(([, transport]) => addressClient(transport));
    const created = await grpc!.createAddress({ address: taggedInput("memory") });
    await assertSameAsRest(rest, created);
    assert.deepEqual(await connect!.getAddress({ id: created.id }), created);
  } finally {
    await server.stop();
  }
});

Deno.test("deno serve (one port): AddressService over Connect and gRPC-Web", async () => {
  const server = await serveMain({
    permissions: ["--allow-net", "--allow-env", "--allow-read"],
    env: { KV_PATH: ":memory:" },
  });
  const rest = addressBook(server.baseUrl);
  try {
    for (
      const transport of [
        connectTransport(server.baseUrl, "1.1", { json: true }),
        grpcWebTransport(server.baseUrl, "1.1"),
      ]
    ) {
      const client = addressClient(transport);
      const created = await client.createAddress({ address: taggedInput("served") });
      await assertSameAsRest(rest, created);
      await client.deleteAddress({ id: created.id, etag: created.etag });
      assert.equal((await rest.get(Number(created.id))).status, 404);
    }
  } finally {
    await server.stop();
  }
});
