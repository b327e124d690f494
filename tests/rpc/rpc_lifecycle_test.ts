import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import tls from "node:tls";
import * as grpc from "@grpc/grpc-js";
import { ConfigError, loadConfig } from "../../lib/config.ts";
import { createLogger } from "../../lib/log.ts";
import { startServer } from "../../main.ts";
import { waitForLine } from "../support/logs.ts";
import {
  booksClient,
  connectTransport,
  grpcJsClient,
  grpcJsUnary,
  grpcTransport,
  http2Session,
} from "../support/rpc_clients.ts";
import { spawnServer, startTestServer } from "../support/server.ts";

const CA = new URL("../../rpc/testdata/ca.crt", import.meta.url).pathname;
const CERT = new URL("../../rpc/testdata/localhost.crt", import.meta.url).pathname;
const KEY = new URL("../../rpc/testdata/localhost.key", import.meta.url).pathname;

/**
 * A Node.js HTTP/2 client (a separate runtime on purpose: Deno 2.9.6's node:http2 client can
 * crash when it receives a GOAWAY, denoland/deno#36788). It opens a call and keeps its request
 * open, prints "ready" once the server has it, and once the server's GOAWAY arrives finishes the call and tries a new
 * stream; then it prints what happened as JSON.
 */
const GOAWAY_CLIENT = `
const http2 = require("node:http2");
const result = {};
const session = http2.connect(process.argv[1]);
session.on("error", (e) => (result.sessionError = e.message));
session.on("goaway", (code, lastStreamId) => {
  result.goaway = { code, lastStreamId };
  try {
    const second = session.request({ ":method": "POST", ":path": "/books.v1.BooksService/books" });
    second.on("error", (e) => (result.secondStream = e.code));
  } catch (e) {
    result.secondStream = e.code;
  }
  setTimeout(() => call.end(), 200);
});
const call = session.request({
  ":method": "POST",
  ":path": "/books.v1.BooksService/books",
  "content-type": "application/grpc",
  te: "trailers",
});
let bytes = 0;
call.on("response", (h) => (result.status = h[":status"]));
call.on("data", (d) => (bytes += d.length));
call.on("trailers", (t) => (result.grpcStatus = t["grpc-status"]));
call.on("close", () => {
  result.bytes = bytes;
  console.log(JSON.stringify(result));
  session.close();
});
// A PING is answered after the frames sent before it were processed, so once its ack is back
// the server holds the open call (the write callback alone only means the bytes left).
call.write(Buffer.from([0, 0, 0, 0, 0]), () => session.ping(() => console.log("ready")));
`;

Deno.test("graceful shutdown: GOAWAY, the in-flight call finishes, no new calls", async () => {
  const server = await startTestServer();
  const child = new Deno.Command("node", {
    args: ["-e", GOAWAY_CLIENT, server.grpcUrl!],
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  try {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let output = "";
    while (!output.includes("ready\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      output += value;
    }
    assert.ok(output.includes("ready"), `the client did not start: ${output}`);
    const stopping = server.close();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      output += value;
    }
    await stopping;
    const result = JSON.parse(output.split("\n").find((l) => l.startsWith("{"))!);
    assert.deepEqual(result.goaway, { code: 0, lastStreamId: 1 });
    // Refused either way; which error a client reports depends on its Node.js version.
    assert.ok(
      ["ERR_HTTP2_GOAWAY_SESSION", "ERR_HTTP2_STREAM_ERROR"].includes(result.secondStream),
      `a new stream after GOAWAY: ${result.secondStream}`,
    );
    assert.equal(result.status, 200);
    assert.equal(result.grpcStatus, "0");
    assert.ok(result.bytes > 1000, "the whole catalogue arrived after the GOAWAY");
  } finally {
    await child.status;
    await child.stderr.cancel();
    await server.close();
  }
});

Deno.test("GRPC_PORT=off: no second listener; Connect still works on the main port", async () => {
  const server = await startTestServer({ GRPC_PORT: "off" });
  try {
    assert.equal(server.grpcUrl, undefined);
    const listening = await waitForLine(() => server.logs, "listening");
    assert.ok(listening.http);
    assert.equal(listening.grpc, undefined);
    const response = await booksClient(connectTransport(server.httpUrl, "1.1")).books({});
    assert.ok(response.book.length >= 25);
  } finally {
    await server.close();
  }
});

Deno.test("GRPC_TLS_CERT/GRPC_TLS_KEY: HTTP/2 over TLS, h2 chosen by ALPN", async (t) => {
  const server = await startTestServer({ GRPC_TLS_CERT: CERT, GRPC_TLS_KEY: KEY });
  const ca = await Deno.readTextFile(CA);
  const url = new URL(server.grpcUrl!);
  const session = http2Session(server.grpcUrl!, { ca });
  try {
    assert.equal(url.protocol, "https:");
    const listening = await waitForLine(() => server.logs, "listening");
    assert.equal(listening.grpc, server.grpcUrl);

    await t.step("ALPN offers h2 first, and http/1.1 for gRPC-Web and Connect", async () => {
      for (const [offer, chosen] of [[["h2", "http/1.1"], "h2"], [["http/1.1"], "http/1.1"]]) {
        const socket = tls.connect({
          host: url.hostname,
          port: Number(url.port),
          ca,
          ALPNProtocols: offer as string[],
        });
        await new Promise<void>((resolve, reject) => {
          socket.once("secureConnect", resolve);
          socket.once("error", reject);
        });
        assert.equal(socket.alpnProtocol, chosen);
        socket.destroy();
      }
    });

    await t.step("a Connect gRPC client trusting the certificate", async () => {
      const response = await booksClient(grpcTransport(server.grpcUrl!, session)).books({});
      assert.ok(response.book.length >= 25);
    });

    await t.step("@grpc/grpc-js with TLS credentials", async () => {
      using client = grpcJsClient(server.grpcUrl!, {
        target: `localhost:${url.port}`,
        credentials: grpc.credentials.createSsl(Buffer.from(ca)),
      });
      const answer = await grpcJsUnary(client, "books");
      assert.ifError(answer.error);
      assert.ok(answer.response!.book.length >= 25);
    });

    await t.step("Connect and gRPC-Web over HTTP/1.1 with TLS (fetch, h2 off)", async () => {
      const client = Deno.createHttpClient({ caCerts: [ca], http2: false });
      try {
        const connect = await fetch(`${server.grpcUrl}/books.v1.BooksService/books`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{}",
          client,
        });
        assert.equal(connect.status, 200);
        assert.ok((await connect.json()).book.length >= 25);
        const web = await fetch(`${server.grpcUrl}/books.v1.BooksService/books`, {
          method: "POST",
          headers: { "content-type": "application/grpc-web+proto" },
          body: new Uint8Array(5),
          client,
        });
        assert.equal(web.status, 200);
        const bytes = new Uint8Array(await web.arrayBuffer());
        assert.ok(bytes.length > 1000);
        assert.match(new TextDecoder().decode(bytes.slice(-40)), /grpc-status: ?0/);
      } finally {
        client.close();
      }
    });

    await t.step("a client that does not trust the certificate is refused", async () => {
      await assert.rejects(booksClient(grpcTransport(server.grpcUrl!)).books({}));
    });
  } finally {
    await server.close();
  }
});

Deno.test("TLS configuration errors stop start-up with a message naming the variable", async () => {
  assert.throws(
    () => loadConfig({ GRPC_TLS_CERT: CERT }),
    (e: unknown) =>
      e instanceof ConfigError &&
      e.message === "invalid GRPC_TLS_KEY: must be set together with GRPC_TLS_CERT",
  );
  assert.throws(
    () => loadConfig({ GRPC_TLS_KEY: KEY }),
    (e: unknown) => e instanceof ConfigError && /^invalid GRPC_TLS_CERT:/.test(e.message),
  );
  const dir = await Deno.makeTempDir();
  try {
    const config = loadConfig({
      PORT: "0",
      GRPC_PORT: "0",
      HOST: "127.0.0.1",
      KV_PATH: `${dir}/kv.sqlite3`,
      GRPC_TLS_CERT: `${dir}/missing.crt`,
      GRPC_TLS_KEY: KEY,
    });
    await assert.rejects(
      startServer(config, { logger: createLogger({ level: "silent" }) }),
      (e: unknown) =>
        e instanceof ConfigError &&
        e.message.startsWith(`invalid GRPC_TLS_CERT=${dir}/missing.crt:`),
    );
    // A file that is not a PEM certificate.
    await Deno.writeTextFile(`${dir}/bad.crt`, "not a certificate");
    await assert.rejects(
      startServer({ ...config, grpcTls: { certFile: `${dir}/bad.crt`, keyFile: KEY } }, {
        logger: createLogger({ level: "silent" }),
      }),
      (e: unknown) => e instanceof ConfigError && e.message.startsWith("invalid GRPC_TLS_CERT="),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a GRPC_PORT already in use fails start-up and releases the HTTP port", async () => {
  const blocker = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const dir = await Deno.makeTempDir();
  try {
    const config = loadConfig({
      PORT: "0",
      GRPC_PORT: String(blocker.addr.port),
      HOST: "127.0.0.1",
      KV_PATH: `${dir}/kv.sqlite3`,
    });
    await assert.rejects(
      startServer(config, { logger: createLogger({ level: "silent" }) }),
      /EADDRINUSE|address already in use/i,
    );
  } finally {
    blocker.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("as a process: the listening line names the gRPC URL; SIGTERM exits 0", async () => {
  const dir = await Deno.makeTempDir();
  const server = await spawnServer({ KV_PATH: `${dir}/kv.sqlite3` });
  try {
    assert.match(server.grpcUrl ?? "", /^http:\/\/127\.0\.0\.1:\d+$/);
    using client = grpcJsClient(server.grpcUrl!);
    const answer = await grpcJsUnary(client, "books");
    assert.ifError(answer.error);
    assert.ok(answer.response!.book.length >= 25);
  } finally {
    assert.equal(await server.stop(), 0, server.output());
    await Deno.remove(dir, { recursive: true });
  }
});
