/**
 * Holds an exclusive SQLite lock on the file named by the first argument, as a backup tool or a
 * `sqlite3` shell can, until its stdin closes. Prints `locked` once it holds it.
 */
import { DatabaseSync } from "node:sqlite";

const db = new DatabaseSync(Deno.args[0]!);
db.exec("PRAGMA locking_mode=EXCLUSIVE; BEGIN EXCLUSIVE");
console.log("locked");
for await (const _ of Deno.stdin.readable) { /* nothing is sent */ }
db.exec("COMMIT");
db.close();
