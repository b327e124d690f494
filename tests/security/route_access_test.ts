/**
 * security/route_access.ts against a small Hono app: the access the gate reads is the one the
 * answering route declares, a request no route takes is as public as its path's routes all are
 * (else it needs a token), and `Allow` lists exactly the methods the router would dispatch.
 * Checked with each of Hono's routers, since the gate asks the app's own.
 */
import assert from "node:assert/strict";
import fc from "fast-check";
import { type Context, Hono } from "hono";
import type { Router } from "hono/router";
import type { H, RouterRoute } from "hono/types";
import { RegExpRouter } from "hono/router/reg-exp-router";
import { TrieRouter } from "hono/router/trie-router";
import { requires } from "../../security/access.ts";
import { MatchOnce } from "../../server/match_once.ts";
import { accessFor, allowedMethods, type RouteMatch } from "../../security/route_access.ts";

type Routed = Router<[H, RouterRoute]>;

function smallApp(router?: Routed): Hono {
  const app = new Hono(router ? { router } : {});
  const ok = (c: Context) => c.text("ok");
  // Middleware runs for every route; a marker here declares nothing for the gate.
  app.use("*", requires("public"));
  app.get("/books", requires("books:read"), ok);
  app.get("/items/:id", requires("addresses:read"), ok);
  app.put("/items/:id", requires("addresses:write"), ok);
  app.delete("/items/:id", requires("addresses:write"), ok);
  app.get("/healthz", requires("probe"), ok);
  app.get("/open", requires("public"), ok);
  app.post("/open", requires("public"), ok);
  app.post("/submit", requires("public"), ok);
  app.get("/secret", requires("addresses:read"), ok);
  app.get("/undeclared", ok);
  return app;
}

const ROUTERS: [string, () => Routed | undefined][] = [
  ["Hono's default router", () => undefined],
  ["RegExpRouter", () => new RegExpRouter()],
  ["TrieRouter", () => new TrieRouter()],
  // The app's: Hono's default router, keeping its last match (server/match_once.ts).
  ["MatchOnce", () => new MatchOnce()],
];

Deno.test("accessFor: the answering route's declaration; else what the path's routes share", () => {
  const cases: [string, string, RouteMatch][] = [
    ["GET", "/books", { access: "books:read", routed: true, route: "/books" }],
    ["HEAD", "/books", { access: "books:read", routed: true, route: "/books" }],
    ["GET", "/items/7", { access: "addresses:read", routed: true, route: "/items/:id" }],
    ["PUT", "/items/7", { access: "addresses:write", routed: true, route: "/items/:id" }],
    ["DELETE", "/items/7", { access: "addresses:write", routed: true, route: "/items/:id" }],
    ["GET", "/healthz", { access: "probe", routed: true, route: "/healthz" }],
    ["POST", "/open", { access: "public", routed: true, route: "/open" }],
    // A route without a declaration is a programming error: refused like an unknown path.
    ["GET", "/undeclared", { access: "authenticated", routed: true, route: "/undeclared" }],
    // No route takes these: a 405 or OPTIONS' answer, as public as the path's routes all are.
    ["POST", "/books", { access: "books:read", routed: false }],
    ["OPTIONS", "/books", { access: "books:read", routed: false }],
    // Only the probe's own route is exempt from the rate limit: another method is public.
    ["POST", "/healthz", { access: "public", routed: false }],
    ["FOO", "/healthz", { access: "public", routed: false }],
    ["OPTIONS", "/healthz", { access: "public", routed: false }],
    ["DELETE", "/open", { access: "public", routed: false }],
    ["GET", "/submit", { access: "public", routed: false }],
    // Routes that need different scopes, or a scope: deny by default.
    ["PATCH", "/items/7", { access: "authenticated", routed: false }],
    ["POST", "/secret", { access: "authenticated", routed: false }],
    ["POST", "/undeclared", { access: "authenticated", routed: false }],
    // No route at all (a 404).
    ["GET", "/nowhere", { access: "authenticated", routed: false }],
    ["GET", "/books/", { access: "authenticated", routed: false }],
    ["GET", "/items", { access: "authenticated", routed: false }],
  ];
  for (const [name, router] of ROUTERS) {
    const app = smallApp(router());
    for (const [method, path, expected] of cases) {
      const { access, routed, route } = accessFor(app.router, method, path);
      assert.deepEqual(
        { access, routed, route },
        { route: undefined, ...expected },
        `${name}: ${method} ${path}`,
      );
    }
  }
});

Deno.test("allowedMethods: what the router dispatches, HEAD with GET, OPTIONS with any", () => {
  const cases: [string, string[]][] = [
    ["/books", ["GET", "HEAD", "OPTIONS"]],
    ["/items/7", ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]],
    ["/open", ["GET", "HEAD", "POST", "OPTIONS"]],
    ["/submit", ["POST", "OPTIONS"]],
    ["/undeclared", ["GET", "HEAD", "OPTIONS"]],
    ["/nowhere", []],
    ["/books/", []],
    ["/", []],
  ];
  for (const [name, router] of ROUTERS) {
    const app = smallApp(router());
    for (const [path, expected] of cases) {
      assert.deepEqual(allowedMethods(app.router, path), expected, `${name}: ${path}`);
    }
  }
});

Deno.test("property: a request is routed exactly when its method is in Allow", () => {
  const app = smallApp();
  const path = fc.array(fc.constantFrom("books", "items", "7", "open", "submit", "healthz", ""), {
    maxLength: 3,
  }).map((segments) => `/${segments.join("/")}`);
  const method = fc.constantFrom("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS");
  fc.assert(
    fc.property(path, method, (p, m) => {
      const allowed = allowedMethods(app.router, p);
      const { routed, access } = accessFor(app.router, m, p);
      const expected = m === "OPTIONS" ? false : allowed.includes(m);
      return routed === expected && (allowed.length > 0 || access === "authenticated");
    }),
    { numRuns: 500 },
  );
});
