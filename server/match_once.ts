import type { Result, Router } from "hono/router";
import { RegExpRouter } from "hono/router/reg-exp-router";
import { SmartRouter } from "hono/router/smart-router";
import { TrieRouter } from "hono/router/trie-router";

/**
 * Hono's router (the one Hono picks by default) that keeps its last match: asked again for the
 * same method and path, it answers the match it made, without searching again.
 *
 * Why: the entry asks the app's router which route will answer (the gate decides from what that
 * route declares), and the app, called right after with the same canonical path, asks again to
 * dispatch. Both get the one match: the route decided on is the route that runs, by construction,
 * and the search is paid once. A match depends on nothing but the method, the path and the routes
 * (adding a route forgets it), so the match kept is the one a new search would find.
 */
export class MatchOnce<T> implements Router<T> {
  readonly name = "MatchOnce";
  readonly #router: Router<T>;
  #method = "";
  #path = "";
  #result: Result<T> | undefined;

  constructor(
    router: Router<T> = new SmartRouter({ routers: [new RegExpRouter(), new TrieRouter()] }),
  ) {
    this.#router = router;
  }

  add(method: string, path: string, handler: T): void {
    this.#result = undefined;
    this.#router.add(method, path, handler);
  }

  match(method: string, path: string): Result<T> {
    if (this.#result !== undefined && method === this.#method && path === this.#path) {
      return this.#result;
    }
    const result = this.#router.match(method, path);
    this.#method = method;
    this.#path = path;
    this.#result = result;
    return result;
  }
}
