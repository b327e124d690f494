/**
 * A client known only by its network address is rate-limited per IPv4 address and per IPv6 /64
 * (one host usually holds a whole /64, so per address it could take 2^64 buckets); an
 * IPv4-mapped IPv6 address (`::ffff:1.2.3.4`, what a dual-stack listener reports for an IPv4
 * client) counts as its IPv4 address.
 */
import assert from "node:assert/strict";
import net from "node:net";
import fc from "fast-check";
import { addressKey, createRateLimiter } from "../../security/rate_limit.ts";
import { startTestServer } from "../support/server.ts";

const hextet = fc.integer({ min: 0, max: 0xffff });
const ipv6 = fc.array(hextet, { minLength: 8, maxLength: 8 });

/** One IPv6 address spelled several ways: expanded, short, `::`-compressed, upper case. */
function spellings(h: number[]): string[] {
  const short = h.map((n) => n.toString(16));
  const expanded = h.map((n) => n.toString(16).padStart(4, "0"));
  const out = [short.join(":"), expanded.join(":"), short.join(":").toUpperCase()];
  // Compress the longest run of zeros (if any) with `::`.
  let best = [-1, 0];
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && h[j] === 0) j++;
    if (j - i > best[1]!) best = [i, j - i];
  }
  if (best[1]! > 0) {
    const [at, length] = best as [number, number];
    out.push(`${short.slice(0, at).join(":")}::${short.slice(at + length).join(":")}`);
  }
  out.push(`[${short.join(":")}]`, `${short.join(":")}%eth0`);
  return out;
}

Deno.test("addressKey: IPv4 as is, IPv6 by /64 in expanded form, IPv4-mapped as IPv4", () => {
  const cases: [string, string][] = [
    ["203.0.113.7", "ip:203.0.113.7"],
    ["2001:db8::1", "ip:2001:0db8:0000:0000::/64"],
    ["2001:db8:0:0:ffff:ffff:ffff:ffff", "ip:2001:0db8:0000:0000::/64"],
    ["2001:DB8:0:1::", "ip:2001:0db8:0000:0001::/64"],
    ["[2001:db8:a:b:c:d:e:f]", "ip:2001:0db8:000a:000b::/64"],
    ["fe80::1%eth0", "ip:fe80:0000:0000:0000::/64"],
    ["::1", "ip:0000:0000:0000:0000::/64"],
    ["::", "ip:0000:0000:0000:0000::/64"],
    ["::ffff:127.0.0.1", "ip:127.0.0.1"],
    ["::FFFF:203.0.113.7", "ip:203.0.113.7"],
    ["::ffff:cb00:7107", "ip:203.0.113.7"],
    ["0:0:0:0:0:ffff:203.0.113.7", "ip:203.0.113.7"],
    ["64:ff9b::203.0.113.7", "ip:0064:ff9b:0000:0000::/64"],
    // Not an address the OS reports: kept as it is (its own bucket).
    ["", "ip:"],
    ["1:2:3", "ip:1:2:3"],
    ["1::2::3", "ip:1::2::3"],
    ["::ffff:1.2.3.256", "ip:::ffff:1.2.3.256"],
    ["12345::", "ip:12345::"],
  ];
  for (const [address, key] of cases) assert.equal(addressKey(address), key, address);
});

Deno.test("addressKey: one key per /64 whatever the spelling, another for every other /64", () => {
  fc.assert(
    fc.property(ipv6, ipv6, (a, b) => {
      // Not IPv4-mapped (those count as IPv4).
      fc.pre(!(a.slice(0, 5).every((n) => n === 0) && a[5] === 0xffff));
      fc.pre(!(b.slice(0, 5).every((n) => n === 0) && b[5] === 0xffff));
      const keyA = addressKey(spellings(a)[0]!);
      for (const spelling of spellings(a)) assert.equal(addressKey(spelling), keyA, spelling);
      // Same prefix, another interface id: the same key.
      const sameNet = [...a.slice(0, 4), ...b.slice(4)];
      assert.equal(addressKey(spellings(sameNet)[1]!), keyA);
      // Another prefix: another key.
      const otherNet = [...b.slice(0, 4), ...a.slice(4)];
      const samePrefix = b.slice(0, 4).every((n, i) => n === a[i]);
      assert.equal(addressKey(spellings(otherNet)[0]!) === keyA, samePrefix);
      assert.match(keyA, /^ip:(?:[0-9a-f]{4}:){4}:\/64$/);
    }),
    { numRuns: 500 },
  );
  fc.assert(
    fc.property(fc.ipV4(), (v4) => {
      const [a, b, c, d] = v4.split(".").map(Number) as [number, number, number, number];
      const hex = `${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
      for (const mapped of [`::ffff:${v4}`, `::ffff:${hex}`, `0:0:0:0:0:ffff:${hex}`]) {
        assert.equal(addressKey(mapped), addressKey(v4), mapped);
      }
      assert.equal(addressKey(v4), `ip:${v4}`);
    }),
  );
});

Deno.test("the limiter keys an address-only client by addressKey", () => {
  const limiter = createRateLimiter({ limit: 1, windowSeconds: 60 }, { now: () => 0 });
  assert.equal(limiter.addressKey("2001:db8::1"), addressKey("2001:db8::1"));
  assert.equal(limiter.take(limiter.addressKey("2001:db8::1")).allowed, true);
  assert.equal(limiter.take(limiter.addressKey("2001:db8::ffff:1")).allowed, false);
  assert.equal(limiter.take(limiter.addressKey("2001:db8:0:1::1")).allowed, true);
});

/** A GET over its own connection from `localAddress`; the answer's status. */
function getFrom(baseUrl: string, host: string, localAddress: string): Promise<number> {
  const port = Number(new URL(baseUrl).port);
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host, port, localAddress }, () => {
      socket.write("GET /rest/books HTTP/1.1\r\nhost: books\r\nconnection: close\r\n\r\n");
    });
    let text = "";
    socket.on("data", (chunk) => (text += chunk));
    socket.on("end", () => resolve(Number(text.split(" ")[1])));
    socket.on("error", reject);
  });
}

Deno.test("over sockets: ::1 and IPv4 clients of a dual-stack listener have their own buckets", async () => {
  const server = await startTestServer({ HOST: "::", GRPC_PORT: "off", RATE_LIMIT: "2/min" });
  const url = server.httpUrl;
  try {
    // ::1 is in the /64 0:0:0:0::/64, like ::ffff:127.0.0.1 read as IPv6 would be.
    assert.deepEqual(
      [await getFrom(url, "::1", "::1"), await getFrom(url, "::1", "::1")],
      [200, 200],
    );
    assert.equal(await getFrom(url, "::1", "::1"), 429);
    // The listener reports these as ::ffff:127.0.0.1 and ::ffff:127.0.0.2: IPv4 clients, each
    // with its own bucket.
    assert.equal(await getFrom(url, "127.0.0.1", "127.0.0.1"), 200);
    assert.deepEqual(
      [await getFrom(url, "127.0.0.1", "127.0.0.2"), await getFrom(url, "127.0.0.1", "127.0.0.2")],
      [200, 200],
    );
    assert.equal(await getFrom(url, "127.0.0.1", "127.0.0.2"), 429);
    assert.equal(await getFrom(url, "127.0.0.1", "127.0.0.1"), 200);
    assert.equal(await getFrom(url, "127.0.0.1", "127.0.0.1"), 429);
  } finally {
    await server.close();
  }
});
