import { ADDRESS_INPUT } from "./addresses_contenders.ts";
import { type BenchContext, httpContender } from "./contenders.ts";
import { httpUrlOf, startOurs } from "./ours.ts";
import { startRawDeno, writeRoutes } from "./peer_services.ts";
import { answer, BOOKS_QUERY, learnGraphql } from "./reference.ts";
import type { Contender, Workload } from "./runner.ts";
import { openAddressStore } from "../store/addresses/repository.ts";
import { openLayout } from "../store/layout/migrate.ts";

/** Catalogue sizes of the scaling run. */
export const BOOK_COUNTS = [10, 1_000, 10_000];
/** Addresses stored for the page workloads. */
export const STORED_ADDRESSES = 100_000;

interface Book {
  id: number;
  title: string;
  year: number;
  author: { firstName: string; lastName: string };
}

/** `count` books built from the shipped catalogue (real titles, numbered past the first round). */
export function generateBooks(shipped: readonly Book[], count: number): Book[] {
  return Array.from({ length: count }, (_, i) => {
    const base = shipped[i % shipped.length]!;
    const round = Math.floor(i / shipped.length);
    return { ...base, id: i + 1, title: round === 0 ? base.title : `${base.title} ${round + 1}` };
  });
}

async function fetchBytes(url: string): Promise<Uint8Array> {
  return (await answer(await fetch(url), `GET ${url}`)).body;
}

/** Stores `count` addresses through the project's own address store (group commit). */
async function seedAddresses(kvPath: string, count: number): Promise<void> {
  const kv = await Deno.openKv(kvPath);
  try {
    // Marks the fresh KV with the current layout first, as a server would; one owner holds them
    // all, past the default quota (the server started on it only reads).
    const guard = await openLayout(kv, kvPath, { migrateOnStart: false });
    const store = openAddressStore(kv, { maxBatch: 500, maxPerOwner: Infinity, guard });
    for (let done = 0; done < count; done += 5_000) {
      const n = Math.min(5_000, count - done);
      await Promise.all(Array.from({ length: n }, () => store.create("", ADDRESS_INPUT)));
    }
  } finally {
    kv.close();
  }
}

/**
 * The scaling run: `GET /rest/books` and the GraphQL books query with 10, 1,000 and 10,000
 * books (each against the raw ceiling serving the same bytes), and `GET /addresses` pages of
 * growing size and depth with 100,000 addresses stored.
 */
export async function buildScaleWorkloads(ctx: BenchContext): Promise<Workload[]> {
  const place = { root: ctx.root, serverCpus: ctx.tools.serverCpus };
  const shipped = JSON.parse(await Deno.readTextFile(`${ctx.root}/store/books.json`)) as Book[];
  const load = `wrk, ${ctx.opts.connections} connections, HTTP/1.1 keep-alive`;
  const queryFile = `${ctx.tmp}/graphql_query.json`;
  await Deno.writeTextFile(queryFile, JSON.stringify({ query: BOOKS_QUERY }));
  const workloads: Workload[] = [];

  for (const count of BOOK_COUNTS) {
    const booksFile = `${ctx.tmp}/books_${count}.json`;
    await Deno.writeTextFile(booksFile, JSON.stringify(generateBooks(shipped, count)));
    const kvDir = () => Deno.makeTempDir({ dir: ctx.tmp, prefix: `kv-${count}-` });
    const probe = await startOurs(place, {
      kvDir: await kvDir(),
      booksFile,
      name: "ours (reference)",
    });
    const base = httpUrlOf(probe);
    const rest = await answer(await fetch(`${base}/rest/books`), "GET /rest/books");
    const graphql = await learnGraphql(base, count);
    await probe.stop();
    const routes = new Map([["GET /rest/books", rest]]);
    if ("body" in graphql) routes.set("POST /graphql", graphql);
    const routesFile = `${ctx.tmp}/routes_${count}.json`;
    await writeRoutes(routesFile, routes);
    const ours = async () => startOurs(place, { kvDir: await kvDir(), booksFile });
    const raw = () => startRawDeno(place, routesFile);
    const label = `${count.toLocaleString("en-US")} books`;

    const restLoad = { status: 200, lengths: [rest.body.byteLength] };
    workloads.push({
      id: `scale-rest-${count}`,
      title: `GET /rest/books, ${label} (${rest.body.byteLength.toLocaleString("en-US")} B)`,
      load,
      checks: "every response: status and exact body size",
      contenders: [
        httpContender({
          ctx,
          name: "ours",
          role: "ours",
          start: ours,
          path: "/rest/books",
          load: restLoad,
        }),
        httpContender({
          ctx,
          name: "raw Deno.serve",
          role: "ceiling",
          start: raw,
          path: "/rest/books",
          load: restLoad,
        }),
      ],
      targets: [],
    });

    const gql: Workload = {
      id: `scale-graphql-${count}`,
      title: `GraphQL books, ${label}`,
      load: `${load}; POST /graphql ${BOOKS_QUERY}`,
      checks: "every response: status and exact body size",
      contenders: [],
      targets: [],
    };
    if ("skipped" in graphql) gql.skipped = graphql.skipped;
    else {
      gql.title += ` (${graphql.body.byteLength.toLocaleString("en-US")} B)`;
      const gqlLoad = {
        status: 200,
        lengths: [graphql.body.byteLength],
        method: "POST" as const,
        bodyFile: queryFile,
      };
      gql.contenders = [
        httpContender({
          ctx,
          name: "ours",
          role: "ours",
          start: ours,
          path: "/graphql",
          load: gqlLoad,
        }),
        httpContender({
          ctx,
          name: "raw Deno.serve",
          role: "ceiling",
          start: raw,
          path: "/graphql",
          load: gqlLoad,
        }),
      ];
    }
    workloads.push(gql);
  }

  const addressDir = await Deno.makeTempDir({ dir: ctx.tmp, prefix: "kv-addresses-" });
  // Seeded when the first page server starts, not while other workloads are measured.
  let seeding: Promise<number> | undefined;
  const seeded = () =>
    seeding ??= (async () => {
      const started = performance.now();
      await seedAddresses(`${addressDir}/kv.sqlite3`, STORED_ADDRESSES);
      return (performance.now() - started) / 1000;
    })();
  const pages: [string, string][] = [
    ["limit=10", "/addresses?limit=10"],
    ["limit=100", "/addresses?limit=100"],
    ["limit=500", "/addresses?limit=500"],
  ];
  const contenders: Contender[] = [];
  for (const [name, path] of pages) {
    contenders.push(pageContender(ctx, place, addressDir, name, path, seeded));
  }
  contenders.push(
    pageContender(ctx, place, addressDir, "limit=100 after id 90,000", "", seeded, true),
  );
  workloads.push({
    id: "scale-addresses",
    title: `GET /addresses pages, ${STORED_ADDRESSES.toLocaleString("en-US")} addresses stored`,
    load: `${load}; one fixed page per row`,
    checks: "every response: status 200 and the exact body size of that page",
    contenders,
    targets: [],
  });
  return workloads;
}

function pageContender(
  ctx: BenchContext,
  place: { root: string; serverCpus: string | undefined },
  kvDir: string,
  name: string,
  path: string,
  seeded: () => Promise<number>,
  deep = false,
): Contender {
  let seconds = 0;
  const contender = httpContender({
    ctx,
    name,
    role: "info",
    start: async () => {
      seconds = await seeded();
      return startOurs(place, { kvDir, name });
    },
    // The deep page's path needs a cursor the server issued: page there once to get it.
    path: path || "/addresses?limit=100",
    load: { status: 200, lengths: [] },
    verify: async (_service, url) => {
      let target = url;
      if (deep) {
        const base = url.slice(0, url.indexOf("/addresses"));
        const page = await fetch(`${base}/addresses?limit=500`);
        let body = await page.json() as { nextCursor: string | null };
        for (let i = 1; i < 180 && body.nextCursor; i++) {
          body = await (await fetch(`${base}/addresses?limit=500&cursor=${body.nextCursor}`))
            .json();
        }
        target = `${base}/addresses?limit=100&cursor=${body.nextCursor}`;
      }
      const bytes = await fetchBytes(target);
      const paths = deep ? await writePath(ctx, target) : undefined;
      return {
        lengths: [bytes.byteLength],
        ...(paths ? { pathsFile: paths } : {}),
        notes: [
          `${bytes.byteLength.toLocaleString("en-US")} B per page; seeded in ${
            seconds.toFixed(1)
          } s`,
        ],
      };
    },
  });
  return contender;
}

async function writePath(ctx: BenchContext, url: string): Promise<string> {
  const file = `${ctx.tmp}/deep_page_path.txt`;
  await Deno.writeTextFile(file, new URL(url).pathname + new URL(url).search + "\n");
  return file;
}
