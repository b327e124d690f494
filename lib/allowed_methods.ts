/** A registered route as Hono lists it in `app.routes`. */
export interface RouteLike {
  method: string;
  path: string;
}

const cache = new WeakMap<readonly RouteLike[], { count: number; patterns: [RegExp, string][] }>();

function toPattern(path: string): RegExp {
  const escaped = path.split("/").map((segment) => {
    if (segment === "*") return ".*";
    if (segment.startsWith(":")) return "[^/]+";
    return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  }).join("/");
  return new RegExp(`^${escaped}/?$`);
}

/**
 * The methods registered for a path (for 405 `Allow` and OPTIONS), derived from the app's own
 * route table so it cannot drift from the routes. Middleware (`ALL`) does not count.
 */
export function allowedMethods(routes: readonly RouteLike[], path: string): string[] {
  let compiled = cache.get(routes);
  if (!compiled || compiled.count !== routes.length) {
    const patterns = routes.filter((r) => r.method !== "ALL").map((r) =>
      [toPattern(r.path), r.method.toUpperCase()] as [RegExp, string]
    );
    compiled = { count: routes.length, patterns };
    cache.set(routes, compiled);
  }
  const methods = new Set<string>();
  for (const [pattern, method] of compiled.patterns) if (pattern.test(path)) methods.add(method);
  if (methods.size === 0) return [];
  if (methods.has("GET")) methods.add("HEAD");
  methods.add("OPTIONS");
  const order = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
  return [...methods].sort((a, b) => order.indexOf(a) - order.indexOf(b));
}
