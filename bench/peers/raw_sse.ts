// The ceiling of an idle event stream: plain Deno.serve holding `GET /addresses/events` open
// with the headers and opening line ours sends, and nothing else (no gate, no feed, no KV).
// What each open stream costs it is the runtime's own share of ours (bench/feed.ts). Prints
// one JSON `listening` line, like the server.

const encoder = new TextEncoder();
const headers = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-store, no-transform",
  "x-accel-buffering": "no",
};

Deno.serve({
  port: 0,
  hostname: "127.0.0.1",
  onListen: ({ port }) =>
    console.log(JSON.stringify({ msg: "listening", http: `http://127.0.0.1:${port}` })),
}, (request) => {
  if (new URL(request.url).pathname !== "/addresses/events") return new Response("ok");
  const opening = encoder.encode(`: changes of this caller\nid: ${crypto.randomUUID()}\n\n`);
  const body = new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(opening) });
  return new Response(body, { headers: { ...headers, "x-request-id": crypto.randomUUID() } });
});
