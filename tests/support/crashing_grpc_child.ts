/**
 * Stands in for rpc/process/grpc_child.ts in supervisor tests: it listens, announces itself as the real
 * child does, writes a few lines of noise to stderr, then dies of an uncaught error.
 */
import {
  CHILD_CONFIG_ENV,
  type GrpcChildConfig,
  READY_MARKER,
} from "../../rpc/process/grpc_child.ts";

const config = JSON.parse(Deno.env.get(CHILD_CONFIG_ENV)!) as GrpcChildConfig;
const listener = Deno.listen({ hostname: config.host, port: config.port });
const { port } = listener.addr as Deno.NetAddr;
const url = `http://${config.host}:${port}`;
console.log(JSON.stringify({ msg: "grpc listening", grpc: url }));
console.error(`${READY_MARKER}${JSON.stringify({ grpc: url })}`);
console.error("Warning: something harmless the runtime printed earlier\n".repeat(3));

function explode(): never {
  throw new Error("on purpose: the test child fails");
}
setTimeout(() => explode(), 50);
