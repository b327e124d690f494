/**
 * AIP-154 over sockets: UpdateAddress and ReplaceAddress honour the etag on the resource
 * (`address.etag`) as they honour the request's `etag` (REST's If-Match): a stale one is ABORTED
 * `precondition-failed` with nothing changed, the current one applies, and a request whose two
 * etags differ is INVALID_ARGUMENT `invalid-parameter` (field `address.etag`) with nothing
 * changed. Every protocol and port (Connect-ES), and grpc-js as an independent client.
 */
import assert from "node:assert/strict";
import { Code } from "@connectrpc/connect";
import { taggedInput } from "../support/requests.ts";
import {
  addressClient,
  errorInfo,
  everyTransport,
  grpcJsClient,
  grpcJsErrorInfo,
  grpcJsUnary,
  protoDefinition,
  rpcFailure,
} from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";

Deno.test("UpdateAddress and ReplaceAddress honour address.etag (AIP-154) in every protocol", async () => {
  const server = await startTestServer();
  try {
    for (const [name, transport] of everyTransport(server)) {
      const client = addressClient(transport);
      const first = await client.createAddress({ address: taggedInput(`${name}-a`) });
      const second = await client.updateAddress({
        id: first.id,
        address: { city: "Paris" },
        updateMask: { paths: ["city"] },
      });
      const stale = first.etag;

      // A stale etag on the resource, none on the request: refused, nothing changed.
      for (
        const call of [
          () =>
            client.updateAddress({
              id: first.id,
              address: { city: "Rome", etag: stale },
              updateMask: { paths: ["city"] },
            }),
          () =>
            client.replaceAddress({
              id: first.id,
              address: { ...taggedInput(`${name}-b`), etag: stale },
            }),
        ]
      ) {
        const error = await rpcFailure(call());
        assert.equal(error.code, Code.Aborted, name);
        assert.equal(errorInfo(error)?.reason, "precondition-failed", name);
        assert.deepEqual(await client.getAddress({ id: first.id }), second, name);
      }

      // The two etags differ: which was meant cannot be told.
      for (
        const call of [
          () =>
            client.updateAddress({
              id: first.id,
              address: { city: "Rome", etag: stale },
              updateMask: { paths: ["city"] },
              etag: second.etag,
            }),
          () =>
            client.replaceAddress({
              id: first.id,
              address: { ...taggedInput(`${name}-b`), etag: second.etag },
              etag: stale,
            }),
        ]
      ) {
        const error = await rpcFailure(call());
        assert.equal(error.code, Code.InvalidArgument, name);
        const info = errorInfo(error);
        assert.equal(info?.reason, "invalid-parameter", name);
        assert.equal(info?.metadata.field, "address.etag", name);
        assert.deepEqual(await client.getAddress({ id: first.id }), second, name);
      }

      // The current etag on the resource (alone, or the same on the request too) applies.
      const updated = await client.updateAddress({
        id: first.id,
        address: { city: "Rome", etag: second.etag },
        updateMask: { paths: ["city"] },
      });
      assert.equal(updated.city, "Rome", name);
      const replaced = await client.replaceAddress({
        id: first.id,
        address: { ...taggedInput(`${name}-c`), etag: updated.etag },
        etag: updated.etag,
      });
      assert.equal(replaced.city, taggedInput(`${name}-c`).city, name);
      assert.notEqual(replaced.etag, updated.etag, name);

      // A malformed etag on the resource is named as the resource's.
      const error = await rpcFailure(
        client.updateAddress({ id: first.id, address: { city: "X", etag: "e".repeat(1001) } }),
      );
      assert.equal(errorInfo(error)?.metadata.field, "address.etag", name);
    }
  } finally {
    await server.close();
  }
});

Deno.test("grpc-js: a stale address.etag is ABORTED precondition-failed", async () => {
  const server = await startTestServer();
  const client = grpcJsClient(server.grpcUrl!, {
    definition: protoDefinition("addresses/v1/addresses.proto"),
    service: ["addresses", "v1", "AddressService"],
  });
  try {
    const created = await grpcJsUnary<{ id: string; etag: string }>(client, "CreateAddress", {
      address: { name: "Grace Hopper", city: "Arlington", postal_code: "22201" },
    });
    assert.equal(created.code, 0);
    const id = created.response!.id;
    const changed = await grpcJsUnary<{ etag: string }>(client, "UpdateAddress", {
      id,
      address: { city: "Paris", etag: created.response!.etag },
      update_mask: { paths: ["city"] },
    });
    assert.equal(changed.code, 0);
    const stale = await grpcJsUnary(client, "UpdateAddress", {
      id,
      address: { city: "Rome", etag: created.response!.etag },
      update_mask: { paths: ["city"] },
    });
    assert.equal(stale.code, Code.Aborted);
    assert.equal(grpcJsErrorInfo(stale)?.reason, "precondition-failed");
  } finally {
    client.close();
    await server.close();
  }
});
