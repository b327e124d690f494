// The stack's own floor for a read by id over Connect and gRPC-Web on the HTTP port: Connect's
// own router and universal handler (@connectrpc/connect, the library this server is built on)
// on plain Deno.serve, with `GetAddress` alone implemented, doing the same KV read as the
// matrix's ceiling (address_book_kv.ts) and encoding the message as it does (address_book_rpc.ts),
// sending the same headers (HEADERS, read by answer_headers.ts), with nothing of this
// server's: no access log, gate, interceptor or error details. So ours ÷ it is what this server
// adds over the library, and it ÷ the ceiling what the library costs. KV_PATH names a copy of
// the KV file. Prints one JSON `listening` line, like the server.
import { Code, ConnectError, createConnectRouter, createContextValues } from "@connectrpc/connect";
import { universalServerResponseToFetch } from "@connectrpc/connect/protocol";
import { AddressService } from "../../rpc/gen/addresses/v1/addresses_pb.ts";
import { openAddressBook } from "./address_book_kv.ts";
import { message } from "./address_book_rpc.ts";
import { answerHeaders } from "./answer_headers.ts";

const kv = await Deno.openKv(Deno.env.get("KV_PATH")!);
const book = await openAddressBook(kv, []);
const headersOf = answerHeaders();

const router = createConnectRouter({ grpc: false });
router.service(AddressService, {
  async getAddress(request) {
    const stored = await book.get(Number(request.id));
    if (stored === undefined) throw new ConnectError("not found", Code.NotFound);
    return message(stored);
  },
});
const handlers = new Map(router.handlers.map((h) => [h.requestPath, h]));
const never = new AbortController().signal;

async function handle(request: Request): Promise<Response> {
  const url = request.url;
  const handler = handlers.get(url.slice(url.indexOf("/", url.indexOf("//") + 2)));
  if (handler === undefined) return new Response(null, { status: 404 });
  // As this server builds it: Connect's universalServerRequestFromFetch reads `request.signal`,
  // which Deno.serve aborts after every answer.
  const answer = universalServerResponseToFetch(
    await handler({
      httpVersion: "",
      method: request.method,
      url,
      header: request.headers,
      body: request.body ?? new ReadableStream({ start: (c) => c.close() }),
      signal: never,
      contextValues: createContextValues(),
    }),
  );
  const headers = headersOf();
  for (const name in headers) {
    if (!answer.headers.has(name)) answer.headers.set(name, headers[name]!);
  }
  return answer;
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handle);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
