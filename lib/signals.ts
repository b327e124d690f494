/**
 * How long after a signal another is a copy of it. The copies arrive within milliseconds of each
 * other; a person or an orchestrator sending a signal again (to end a drain) takes longer.
 */
export const COPY_MS = 300;

/**
 * Listens for `signals` and calls `handle` once per signal sent, not once per copy received.
 *
 * Why: a terminal's Ctrl-C reaches the whole foreground process group, `deno task` passes the
 * signals it gets on to its child as well, and the watcher of `deno run --watch` answers its own
 * SIGINT with a SIGTERM to its child. One Ctrl-C (or `kill -TERM -<pgid>`, or `timeout`) thus
 * reaches this process two or three times, a few milliseconds apart; counted each time, it logged
 * as many "shutting down" lines, and one SIGTERM ended the drain it had started.
 */
export function onSignals(
  signals: readonly Deno.Signal[],
  handle: (signal: Deno.Signal) => void,
): void {
  let last = -Infinity;
  for (const signal of signals) {
    Deno.addSignalListener(signal, () => {
      const at = performance.now();
      const copy = at - last < COPY_MS;
      last = at;
      if (!copy) handle(signal);
    });
  }
}
