// ESM consumer of the installed tarball: every entry point imports, and a table round-trips through the
// native binary loaded from its platform package.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as arrow from "apache-arrow";
import memwal, { connect, makeArrowTable, serve } from "memwal";
import { makeEmptyTable } from "memwal/arrow";
import { getRegistry } from "memwal/embedding";
import { OpenAIEmbeddingFunction } from "memwal/embedding/openai";
import { sanitizeType } from "memwal/sanitize";
import { toSQL } from "memwal/util";

const db = await connect("memory://");
const t = await db.createTable(
  "t",
  makeArrowTable([
    { id: 1, vector: [1, 2] },
    { id: 2, vector: [3, 4] },
  ]),
);
await t
  .mergeInsert("id")
  .whenMatchedUpdateAll()
  .whenNotMatchedInsertAll()
  .execute([{ id: 3, vector: [5, 6] }]);
const rows = await t.search([5, 6]).limit(1).toArray();
if (rows[0].id !== 3) throw new Error(`ESM smoke: nearest row is ${rows[0].id}, want 3`);
if (makeEmptyTable(new arrow.Schema([new arrow.Field("a", new arrow.Int32())])).numRows !== 0) throw new Error("makeEmptyTable");
if (typeof getRegistry().get !== "function") throw new Error("memwal/embedding: no registry");
if (typeof OpenAIEmbeddingFunction !== "function") throw new Error("memwal/embedding/openai");
if (toSQL([1, null]) !== "[1, NULL]" || String(sanitizeType("utf8")) !== "Utf8") throw new Error("memwal/util, memwal/sanitize");
if (memwal.connect !== connect) throw new Error("the default import is not the module");

// The bundled server, and a memWal upsert through it.
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "memwal-smoke-"));
const server = await serve({ dataDir, apiKey: "k" });
try {
  const remote = await connect("db://smoke", { apiKey: "k", hostOverride: server.url });
  const r = await remote.createTable("r", [{ id: 1, vector: [1, 2] }]);
  const m = await r
    .mergeInsert("id")
    .whenMatchedUpdateAll()
    .whenNotMatchedInsertAll()
    .memWal()
    .execute([{ id: 2, vector: [3, 4] }]);
  if (m.numInsertedRows !== 1 || (await r.countRows()) !== 2) throw new Error("served memWal upsert");
} finally {
  await server.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
}
console.log(`ESM smoke ok: ${await t.countRows()} rows`);
