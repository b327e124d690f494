import type { Hono } from "hono";
import { AppError } from "../lib/errors.ts";
import type { AppEnv } from "../lib/http/hono_env.ts";
import { requires } from "../security/access.ts";
import { GRAPHQL_ASSETS_PATH, GRAPHQL_PATH } from "../lib/paths.ts";

const JS = "text/javascript; charset=utf-8";
const CSS = "text/css; charset=utf-8";

/**
 * The page's assets, read at run time from the installed npm packages (graphiql 3 ships a UMD
 * bundle that needs React 18 as globals); nothing third-party is committed. A package's files are
 * found next to its package.json, which every package exports, so this works with or without a
 * node_modules directory.
 */
// A Map, as the name comes from the request path: a plain object would find `constructor`.
const PACKAGE_ASSETS = new Map<string, { pkg: string; file: string; type: string }>([
  ["react.production.min.js", { pkg: "react", file: "umd/react.production.min.js", type: JS }],
  ["react-dom.production.min.js", {
    pkg: "react-dom",
    file: "umd/react-dom.production.min.js",
    type: JS,
  }],
  ["graphiql.min.js", { pkg: "graphiql", file: "graphiql.min.js", type: JS }],
  ["graphiql.min.css", { pkg: "graphiql", file: "graphiql.min.css", type: CSS }],
  // The client of GraphQL over Server-Sent Events: subscriptions (graphql/event_stream.ts).
  ["graphql-sse.min.js", { pkg: "graphql-sse", file: "umd/graphql-sse.min.js", type: JS }],
]);

/** The books query GraphiQL opens with. */
const DEFAULT_QUERY = `# The book list. Press the run button or Ctrl-Enter.
{
  books {
    title
    year
    author {
      firstName
      lastName
    }
  }
}
`;

// Our own start-up script, served as a file so the page's CSP needs no inline script.
const INIT_SCRIPT = `"use strict";
const url = new URL(${JSON.stringify(GRAPHQL_PATH)}, location.href).href;
const http = GraphiQL.createFetcher({ url });
// The kind of the operation that runs (the named one, else the first), read off the text: what
// GraphiQL hands the fetcher besides it may describe an earlier edit.
function isSubscription(params) {
  const text = params.query.replace(/#[^\\n]*/g, "").replace(/"(?:[^"\\\\]|\\\\.)*"/g, '""');
  const operations = [...text.matchAll(/(?:^|[}\\s])(query|mutation|subscription)\\b\\s*([_A-Za-z][_0-9A-Za-z]*)?/g)];
  const operation = params.operationName
    ? operations.find((m) => m[2] === params.operationName)
    : operations[0];
  return Boolean(operation) && operation[1] === "subscription";
}
// Subscriptions over GraphQL over Server-Sent Events (graphql-sse's client, distinct
// connections); everything else over plain POST.
function fetcher(params, opts) {
  if (!isSubscription(params)) return http(params, opts);
  const client = graphqlSse.createClient({
    url,
    headers: (opts && opts.headers) || {},
    singleConnection: false,
    retryAttempts: 0,
  });
  return client.iterate(params);
}
ReactDOM.createRoot(document.getElementById("graphiql")).render(
  React.createElement(GraphiQL, {
    fetcher,
    defaultQuery: ${JSON.stringify(DEFAULT_QUERY)},
    defaultEditorToolsVisibility: false,
  }),
);
`;

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>GraphiQL – books</title>
<link rel="stylesheet" href="${GRAPHQL_ASSETS_PATH}/graphiql.min.css">
<link rel="stylesheet" href="${GRAPHQL_ASSETS_PATH}/page.css">
</head>
<body>
<div id="graphiql">Loading GraphiQL…</div>
<script src="${GRAPHQL_ASSETS_PATH}/react.production.min.js"></script>
<script src="${GRAPHQL_ASSETS_PATH}/react-dom.production.min.js"></script>
<script src="${GRAPHQL_ASSETS_PATH}/graphiql.min.js"></script>
<script src="${GRAPHQL_ASSETS_PATH}/graphql-sse.min.js"></script>
<script src="${GRAPHQL_ASSETS_PATH}/init.js"></script>
</body>
</html>
`;

const PAGE_CSS = "html, body, #graphiql { height: 100%; margin: 0; }\n";

/** The GraphiQL page. */
export function graphiqlPage(): Response {
  return new Response(PAGE, {
    headers: {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-cache",
      "vary": "Accept",
    },
  });
}

const loaded = new Map<string, Promise<Uint8Array<ArrayBuffer>>>();

async function packageFile(pkg: string, file: string): Promise<Uint8Array<ArrayBuffer>> {
  const root = import.meta.resolve(`${pkg}/package.json`);
  return await Deno.readFile(new URL(file, root));
}

function assetBytes(name: string): Promise<Uint8Array<ArrayBuffer>> | undefined {
  const asset = PACKAGE_ASSETS.get(name);
  if (asset === undefined) return undefined;
  let bytes = loaded.get(name);
  if (bytes === undefined) {
    bytes = packageFile(asset.pkg, asset.file);
    // A failed read (package missing) is retried on the next request rather than cached.
    bytes.catch(() => loaded.delete(name));
    loaded.set(name, bytes);
  }
  return bytes;
}

/** Serves GraphiQL's assets at `/graphql/assets/{name}`. */
export function graphiqlAssetRoutes(app: Hono<AppEnv>): void {
  app.get(`${GRAPHQL_ASSETS_PATH}/:name`, requires("public"), async (c) => {
    const name = c.req.param("name");
    const cacheControl = "public, max-age=3600";
    if (name === "init.js" || name === "page.css") {
      return new Response(name === "init.js" ? INIT_SCRIPT : PAGE_CSS, {
        headers: { "content-type": name === "init.js" ? JS : CSS, "cache-control": cacheControl },
      });
    }
    const bytes = assetBytes(name);
    if (bytes === undefined) {
      throw new AppError("route-not-found", `No GraphiQL asset is named ${name.slice(0, 100)}.`);
    }
    return new Response(await bytes, {
      headers: { "content-type": PACKAGE_ASSETS.get(name)!.type, "cache-control": cacheControl },
    });
  });
}
