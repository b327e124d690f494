/**
 * WatchAddresses through @grpc/grpc-js, a client that shares none of the server's code (Connect),
 * loaded from the .proto files: the position first, then the changes made over REST; an expired
 * token is OUT_OF_RANGE with ErrorInfo `events-expired`.
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import { EXAMPLE_INPUT } from "../../lib/address.ts";
import { restDoor } from "../support/address_doors.ts";
import {
  type GrpcJsClient,
  grpcJsClient,
  grpcJsErrorInfo,
  protoDefinition,
} from "../support/rpc_clients.ts";
import { startTestServer } from "../support/server.ts";
import { hsToken, SECRET } from "../support/tokens.ts";

interface Message {
  type: string;
  id: string;
  address?: { id: string; name: string; etag: string };
  resume_token: string;
}

function watch(client: GrpcJsClient, token: string, after = "") {
  const metadata = new grpc.Metadata();
  metadata.set("authorization", `Bearer ${token}`);
  const call: grpc.ClientReadableStream<Message> = client.WatchAddresses(
    { resume_token: after },
    metadata,
  );
  const messages: Message[] = [];
  const waiting: (() => void)[] = [];
  let status: grpc.StatusObject | undefined;
  let error: grpc.ServiceError | undefined;
  call.on("data", (m: Message) => {
    messages.push(m);
    waiting.splice(0).forEach((w) => w());
  });
  call.on("error", (e: grpc.ServiceError) => (error = e));
  call.on("status", (s: grpc.StatusObject) => {
    status = s;
    waiting.splice(0).forEach((w) => w());
  });
  return {
    call,
    messages,
    get status() {
      return status;
    },
    get error() {
      return error;
    },
    async until(n: number) {
      const deadline = Date.now() + 5000;
      while (messages.length < n && status === undefined && Date.now() < deadline) {
        await new Promise<void>((resolve) => {
          waiting.push(resolve);
          setTimeout(resolve, 200);
        });
      }
    },
  };
}

Deno.test("WatchAddresses over grpc-js: the position, then REST's writes; an expired token is OUT_OF_RANGE", async () => {
  const server = await startTestServer({ AUTH_JWT_SECRET: SECRET, EVENTS_RETENTION: "1s" });
  using client = grpcJsClient(server.grpcUrl!, {
    definition: protoDefinition("addresses/v1/addresses.proto", {
      enums: String,
      longs: String,
      defaults: true,
    }),
    service: ["addresses", "v1", "AddressService"],
  });
  try {
    const token = await hsToken({ sub: "alice", scope: "addresses:read addresses:write" });
    const stream = watch(client, token);
    await stream.until(1);
    assert.equal(stream.messages[0]?.type, "TYPE_UNSPECIFIED");
    assert.match(stream.messages[0]!.resume_token, /^[A-Za-z0-9_-]{22}$/);
    const rest = restDoor(server.httpUrl, token);
    const created = await rest.create(EXAMPLE_INPUT);
    assert.ok(created.ok);
    await stream.until(2);
    const event = stream.messages[1]!;
    assert.equal(event.type, "CREATED");
    assert.equal(event.id, String(created.value.address.id));
    assert.equal(event.address?.etag, created.value.etag);
    assert.equal(event.address?.name, EXAMPLE_INPUT.name);
    stream.call.cancel();

    // The change after that token is older than the retention by the time it is asked for.
    assert.ok((await rest.update(created.value.address.id, { city: "Ely" })).ok);
    await new Promise((r) => setTimeout(r, 1500));
    const late = watch(client, token, event.resume_token);
    await late.until(1);
    assert.equal(late.messages.length, 0);
    assert.equal(late.status?.code, grpc.status.OUT_OF_RANGE);
    assert.equal(
      grpcJsErrorInfo({ code: late.status!.code, metadata: late.status!.metadata } as never)
        ?.reason,
      "events-expired",
    );
  } finally {
    await server.close();
  }
});
