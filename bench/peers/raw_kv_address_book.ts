// The matrix's ceiling for the HTTP port: plain Deno.serve answering the address book straight
// from Deno KV (address_book_kv.ts) in the framings this server offers there: REST (`/addresses`,
// version 2 PUT by its media type, PATCH as a merge patch), GraphQL (`POST /graphql`,
// address_book_graphql.ts), Connect (binary protobuf) and gRPC-Web (`/addresses.v1.AddressService/
// <Method>`, address_book_rpc.ts). Per request: the body read and parsed, one operation of the
// address book, the answer encoded and sent with the headers HEADERS names: `static`, the values
// this server sent for the same request, copied; `dynamic`, the ones the peer computes per answer
// (`etag`, `location`, `x-request-id`). KV_PATH names a copy of the KV file the server reads;
// V1_KEPT the fields a version 1 replace keeps. Prints one JSON `listening` line, like the server.
import { type AddressBook, NotFound, openAddressBook, type Stored } from "./address_book_kv.ts";
import { addressCall, RpcStatus } from "./address_book_rpc.ts";
import { graphqlAnswer } from "./address_book_graphql.ts";
import { answerHeaders } from "./answer_headers.ts";

const SERVICE = "/addresses.v1.AddressService/";
const encoder = new TextEncoder();
const GRPC_WEB_OK = encoder.encode("grpc-status: 0\r\n");
const V2 = "application/vnd.books.v2+json";

const kv = await Deno.openKv(Deno.env.get("KV_PATH")!);
const book: AddressBook = await openAddressBook(
  kv,
  (Deno.env.get("V1_KEPT") ?? "").split(",").filter((n) => n !== ""),
);
const headersOf = answerHeaders();

function answer(body: BodyInit | null, status: number, stored?: Stored): Response {
  const headers = headersOf({
    etag: stored?.etag,
    location: stored && status === 201 ? `/addresses/${stored.address.id}` : undefined,
  });
  return new Response(body, { status, headers });
}

const notFound = () => new Response('{"error":"not found"}', { status: 404 });

async function rest(request: Request, path: string, query: string): Promise<Response> {
  if (path === "/addresses") {
    if (request.method === "POST") {
      const stored = await book.create(await request.json());
      return answer(JSON.stringify(stored.address), 201, stored);
    }
    const params = new URLSearchParams(query);
    const page = await book.page(
      Number(params.get("limit") ?? 50),
      book.cursors.position(params.get("cursor")),
    );
    const addresses = page.items.map((s) => s.address);
    const nextCursor = page.next === null ? null : book.cursors.after(page.next);
    return answer(JSON.stringify({ addresses, nextCursor }), 200);
  }
  const id = Number(/^\/addresses\/([1-9][0-9]{0,15})$/.exec(path)?.[1]);
  if (!Number.isSafeInteger(id)) return notFound();
  let stored: Stored | undefined;
  switch (request.method) {
    case "GET":
      stored = await book.get(id);
      break;
    case "PUT":
      if (request.headers.get("content-type") !== V2) return notFound();
      stored = await book.replace(id, await request.json());
      break;
    case "PATCH":
      stored = await book.update(id, await request.json());
      break;
    case "DELETE":
      await book.remove(id);
      return answer(null, 204);
  }
  return stored ? answer(JSON.stringify(stored.address), 200, stored) : notFound();
}

async function rpc(request: Request, method: string): Promise<Response> {
  const body = new Uint8Array(await request.arrayBuffer());
  const grpcWeb = request.headers.get("content-type")?.startsWith("application/grpc-web");
  if (!grpcWeb) {
    try {
      return answer(await addressCall(book, method, body), 200);
    } catch (error) {
      if (!(error instanceof RpcStatus)) throw error;
      return new Response('{"code":"not_found"}', { status: 404 });
    }
  }
  const length = new DataView(body.buffer, body.byteOffset).getUint32(1);
  let message: Uint8Array;
  try {
    message = await addressCall(book, method, body.subarray(5, 5 + length));
  } catch (error) {
    if (!(error instanceof RpcStatus)) throw error;
    // Trailers only: the status in a trailer frame, no message.
    return answer(grpcWebFrames(undefined, encoder.encode(`grpc-status: ${error.code}\r\n`)), 200);
  }
  return answer(grpcWebFrames(message, GRPC_WEB_OK), 200);
}

/** A gRPC-Web body: the message's frame (if any), then the trailer frame. */
function grpcWebFrames(message: Uint8Array | undefined, trailer: Uint8Array) {
  const head = message === undefined ? 0 : 5 + message.byteLength;
  const out = new Uint8Array(head + 5 + trailer.byteLength);
  const view = new DataView(out.buffer);
  if (message !== undefined) {
    view.setUint32(1, message.byteLength);
    out.set(message, 5);
  }
  out[head] = 0x80;
  view.setUint32(head + 1, trailer.byteLength);
  out.set(trailer, head + 5);
  return out;
}

async function handle(request: Request): Promise<Response> {
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const q = url.indexOf("?", start);
  const path = q === -1 ? url.slice(start) : url.slice(start, q);
  try {
    if (path === "/graphql") return answer(await graphqlAnswer(book, await request.text()), 200);
    if (path.startsWith(SERVICE)) return await rpc(request, path.slice(SERVICE.length));
    return await rest(request, path, q === -1 ? "" : url.slice(q + 1));
  } catch (error) {
    if (error instanceof NotFound) return notFound();
    return new Response(String(error), { status: 500 });
  }
}

const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handle);
console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${server.addr.port}` }));
Deno.addSignalListener("SIGTERM", () => server.shutdown().then(() => Deno.exit(0)));
