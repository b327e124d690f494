/**
 * What `deno task start` and `deno task dev` run: main.ts as `deno run main.ts` runs it, both
 * listeners, the gRPC one supervised.
 *
 * Why a module of its own: `deno run` warns ("Detected export default { fetch }, did you mean to
 * run "deno serve"?") when the module it starts has a default export with `fetch`, and main.ts
 * needs that export for `deno serve` and Deno Deploy. Deno looks only at the module it starts,
 * and this one exports nothing.
 */
import { main } from "./main.ts";

main();
