/** A Deno.serve handler: the app's `fetch`, or something placed in front of it. */
export type Handler = (
  request: Request,
  info: Deno.ServeHandlerInfo,
) => Response | Promise<Response>;

/** The path of an absolute request URL, without query or fragment, as Hono matches it. */
export function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const query = url.indexOf("?", start);
  return query === -1 ? url.slice(start) : url.slice(start, query);
}
