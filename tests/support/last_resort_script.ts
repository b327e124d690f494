/**
 * A process with the gRPC listener's last-resort handler (rpc/process/last_resort.ts) that lets errors
 * escape in every way a callback can, then says whether it is still alive.
 *
 *   deno run tests/support/last_resort_script.ts some|flood
 */
import { EventEmitter } from "node:events";
import process from "node:process";
import { setImmediate } from "node:timers";
import { createLogger } from "../../lib/log.ts";
import { installLastResort } from "../../rpc/process/last_resort.ts";

const mode = Deno.args[0] ?? "some";
const logger = createLogger({ level: "info" });
installLastResort({
  logger,
  onUnsafe: (reason) => {
    logger.info("unsafe", { reason });
    logger.flush();
    Deno.exit(70);
  },
}, { loggedPerWindow: 3, budgetPerWindow: 20, windowMs: 200 });

function failInATimer() {
  throw new TypeError("from a timer");
}

if (mode === "some") {
  process.nextTick(() => {
    throw new Error("from nextTick");
  });
  // What node:http2 does with a stream destroyed by its connection's error and no listener.
  setImmediate(() =>
    new EventEmitter().emit(
      "error",
      Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" }),
    )
  );
  setTimeout(failInATimer, 1);
  void Promise.reject(new Error("rejected"));
} else {
  for (let i = 0; i < 30; i++) setTimeout(failInATimer, 1);
}
setTimeout(() => {
  logger.info("alive");
  logger.flush();
}, 400);
