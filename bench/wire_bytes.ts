// Bytes on the wire per request: a TCP relay in front of a server counts what passes each way
// while a load generator sends a known number of requests through it, so headers, framing and
// (over HTTP/2) HPACK's savings on a kept connection are all in the count.

/** Bytes per request, each way. */
export interface WireBytes {
  request: number;
  response: number;
}

/**
 * Relays connections to `target` (`http://host:port`) while `use` runs with the relay's base URL;
 * `use` answers how many requests it sent and how many of them were answered (a load generator
 * stopped by time leaves one in flight per connection). Per request: bytes client → server, per
 * answer: bytes back.
 */
export async function wireBytes(
  target: string,
  use: (relayBase: string) => Promise<{ sent: number; answered: number }>,
): Promise<WireBytes> {
  const { hostname, port } = new URL(target);
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let sent = 0;
  let received = 0;
  const relays: Promise<unknown>[] = [];
  const counting = (add: (n: number) => void) =>
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, out) {
        add(chunk.byteLength);
        out.enqueue(chunk);
      },
    });
  const accepting = (async () => {
    for await (const client of listener) {
      const server = await Deno.connect({ hostname, port: Number(port) });
      const pipe = (from: Deno.Conn, to: Deno.Conn, add: (n: number) => void) =>
        from.readable.pipeThrough(counting(add)).pipeTo(to.writable).catch(() => {});
      relays.push(
        Promise.all([
          pipe(client, server, (n) => (sent += n)),
          pipe(server, client, (n) => (received += n)),
        ]).finally(() => {
          for (const conn of [client, server]) {
            try {
              conn.close();
            } catch { /* closed by its pipe */ }
          }
        }),
      );
    }
  })();
  let count: { sent: number; answered: number };
  try {
    count = await use(`http://127.0.0.1:${listener.addr.port}`);
  } finally {
    listener.close();
    await accepting.catch(() => {});
  }
  await Promise.all(relays);
  if (!(count.answered > 0)) throw new Error("no request went through the relay");
  return { request: sent / count.sent, response: received / count.answered };
}
