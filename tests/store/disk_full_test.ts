import assert from "node:assert/strict";
import { waitForLine } from "../support/logs.ts";
import {
  freePort,
  MAIN,
  spawnDeno,
  type Spawned,
  spawnMainOnFreePorts,
  START_PERMISSIONS,
  untilStatus,
} from "../support/process.ts";
import { addressBook, answerOf, named } from "../support/requests.ts";

// A real full disk under a running server, two ways: a tiny tmpfs (needs a user and mount
// namespace: `unshare -rm`, no root) and a file-size limit (`prlimit --fsize` on the server
// process, no privilege at all; writes past it fail with EFBIG). The same behaviour is covered
// everywhere by tests/store/storage_faults_test.ts, with the fault injected under the store.

function succeeds(command: string, args: string[]): boolean {
  try {
    return new Deno.Command(command, { args, stdout: "null", stderr: "null" }).outputSync()
      .success;
  } catch {
    return false;
  }
}

/** Whether this machine lets an unprivileged user mount a tmpfs in a namespace of its own. */
function canMountTmpfs(): boolean {
  if (Deno.build.os !== "linux" || !succeeds("nsenter", ["--version"])) return false;
  const dir = Deno.makeTempDirSync({ prefix: "books-ns-probe-" });
  try {
    return succeeds("unshare", ["-rm", "sh", "-c", 'mount -t tmpfs -o size=1m tmpfs "$0"', dir]);
  } finally {
    Deno.removeSync(dir);
  }
}

const TMPFS = canMountTmpfs();
const PRLIMIT = Deno.build.os === "linux" && succeeds("prlimit", ["--version"]);

async function listIds(base: string): Promise<number[]> {
  return (await addressBook(base).listAll()).map((a) => a.id);
}

async function listening(server: Spawned): Promise<string> {
  return String((await waitForLine(server.lines, "listening")).http);
}

/**
 * Drives one episode against a running server: creates before, then `fill`, creates until the
 * storage refuses (every answer 201 or 503 storage-unavailable), readiness 503, then `makeRoom`,
 * readiness back to 200 by itself, creates again. Returns the ids acknowledged.
 */
async function episode(
  server: Spawned,
  base: string,
  fill: () => Promise<void>,
  makeRoom: () => Promise<void>,
): Promise<number[]> {
  const api = addressBook(base);
  const create = async (name: string) => await answerOf(await api.create(named(name)));
  const acknowledged: number[] = [];
  for (let i = 0; i < 20; i++) {
    const { status, body } = await create(`before ${i}`);
    assert.equal(status, 201);
    acknowledged.push(body.id);
  }
  await fill();
  // SQLite may still fit a few writes into pages it holds: create until one is refused.
  let refused = 0;
  for (let i = 0; refused < 20; i++) {
    assert.ok(i < 20_000, "the storage never refused a write");
    const { status, headers, body } = await create(`during ${i}`);
    if (status === 201) {
      acknowledged.push(body.id);
      continue;
    }
    assert.equal(status, 503);
    assert.equal(headers.get("retry-after"), "5");
    assert.equal(body.errors[0].error, "storage-unavailable");
    refused++;
  }
  const ready = await fetch(`${base}/readyz`);
  assert.equal(ready.status, 503);
  assert.equal((await ready.json()).errors[0].error, "storage-unavailable");

  await makeRoom();
  await untilStatus(`${base}/readyz`, 200, "readiness once there is room");
  for (let i = 0; i < 20; i++) {
    const { status, body } = await create(`after ${i}`);
    assert.equal(status, 201);
    acknowledged.push(body.id);
  }
  assert.deepEqual(await listIds(base), acknowledged.toSorted((a, b) => a - b));

  await waitForLine(server.lines, "storage works again");
  const lines = server.lines();
  assert.equal(lines.filter((l) => l.msg === "storage failing").length, 1);
  assert.ok(lines.every((l) => l.stack === undefined), "no stack trace in the log");
  assert.ok(lines.every((l) => l.status !== 500), "no 500");
  assert.doesNotMatch(server.output(), /Uncaught|panicked/);
  return acknowledged;
}

Deno.test({
  name:
    "a full tmpfs under the server: creates answer 503 storage-unavailable, readiness 503, back by itself when there is room, nothing acknowledged lost across a restart",
  ignore: !TMPFS,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "books-tmpfs-" });
    // Holds the namespace (and the tmpfs) until its stdin closes, across server restarts.
    const holder = new Deno.Command("unshare", {
      args: [
        "-rm",
        "sh",
        "-c",
        'mount -t tmpfs -o size=16m tmpfs "$0" && echo mounted && exec cat',
        dir,
      ],
      stdin: "piped",
      stdout: "piped",
    }).spawn();
    const seen = holder.stdout.getReader();
    // A shell inside the namespace (Deno reads /proc/<pid>/root only with --allow-all).
    const shell = (script: string) =>
      new Deno.Command("nsenter", {
        args: [
          "-t",
          String(holder.pid),
          "-U",
          "-m",
          "--preserve-credentials",
          "sh",
          "-c",
          script,
          dir,
        ],
        stdout: "piped",
        stderr: "piped",
      }).output();
    const env = {
      PORT: String(freePort()),
      GRPC_PORT: "off",
      HOST: "127.0.0.1",
      KV_PATH: `${dir}/kv.sqlite3`,
    };
    const run = () =>
      spawnDeno(
        [
          "-t",
          String(holder.pid),
          "-U",
          "-m",
          "--preserve-credentials",
          Deno.execPath(),
          "run",
          ...START_PERMISSIONS,
          MAIN,
        ],
        env,
        undefined,
        "nsenter",
      );
    try {
      assert.equal(new TextDecoder().decode((await seen.read()).value).trim(), "mounted");
      const server = run();
      let acknowledged: number[];
      try {
        const base = await listening(server);
        acknowledged = await episode(server, base, async () => {
          const out = await shell('head -c 67108864 /dev/zero > "$0/filler"');
          assert.equal(out.success, false, "the 16 MiB tmpfs took 64 MiB");
          assert.match(new TextDecoder().decode(out.stderr), /No space left on device/);
        }, async () => {
          assert.ok((await shell('rm "$0/filler"')).success);
        });
        const failing = server.lines().find((l) => l.msg === "storage failing")!;
        assert.equal(failing.reason, "disk full");
        assert.equal(failing.error, "database or disk is full");
      } finally {
        assert.equal(await server.stop(), 0);
      }
      const again = run();
      try {
        assert.deepEqual(
          await listIds(await listening(again)),
          acknowledged.toSorted((a, b) => a - b),
          "every acknowledged address after a restart",
        );
      } finally {
        assert.equal(await again.stop(), 0);
      }
    } finally {
      seen.releaseLock();
      await holder.stdin.close();
      await holder.stdout.cancel();
      await holder.status;
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "a file-size limit reached under the server (EFBIG): 503 storage-unavailable, readiness 503, back by itself when it is raised, nothing acknowledged lost",
  ignore: !PRLIMIT,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "books-fsize-" });
    const kvPath = `${dir}/kv.sqlite3`;
    const env = { GRPC_PORT: "off", KV_PATH: kvPath };
    const prlimit = async (pid: number, soft: string) => {
      // Only the soft limit: raising it again up to the hard one needs no privilege.
      const out = await new Deno.Command("prlimit", {
        args: ["--pid", String(pid), `--fsize=${soft}:`],
      }).output();
      assert.ok(out.success, new TextDecoder().decode(out.stderr));
    };
    try {
      const server = spawnMainOnFreePorts(env);
      let acknowledged: number[];
      try {
        const base = await listening(server);
        acknowledged = await episode(server, base, async () => {
          const sizes = [kvPath, `${kvPath}-wal`].map((f) => {
            try {
              return Deno.statSync(f).size;
            } catch {
              return 0;
            }
          });
          await prlimit(server.pid, String(Math.max(...sizes)));
        }, () => prlimit(server.pid, "unlimited"));
        const failing = server.lines().find((l) => l.msg === "storage failing")!;
        assert.equal(failing.reason, "I/O error");
      } finally {
        assert.equal(await server.stop(), 0, "SIGXFSZ did not kill it");
      }
      const again = spawnMainOnFreePorts(env);
      try {
        assert.deepEqual(
          await listIds(await listening(again)),
          acknowledged.toSorted((a, b) => a - b),
          "every acknowledged address after a restart",
        );
      } finally {
        assert.equal(await again.stop(), 0);
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
