// Captures what the official @lancedb/lancedb client sends, operation by
// operation, into the golden fixture that crates/remote/tests/golden.rs checks
// our client against.
//
//   npm run build && npm install --prefix bench && node scripts/capture-official.mjs
//
// A recording proxy on 127.0.0.1 sits between the official client and our own
// server (serve() from dist/), so every answer the client gets is a real one.
// Each recorded request keeps its method, path, query (in order), headers and
// body: JSON bodies as JSON, Arrow bodies as base64 (they are LZ4-compressed
// IPC streams, which apache-arrow JS cannot decode; the Rust test can).
import * as fs from "node:fs";
import * as http from "node:http";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(path.join(root, "bench", "package.json"));
const lancedb = require("@lancedb/lancedb");
const arrow = require("apache-arrow");
const clientVersion = JSON.parse(
  fs.readFileSync(path.join(root, "bench", "node_modules", "@lancedb", "lancedb", "package.json"), "utf8"),
).version;
const memwal = require(path.join(root, "dist", "lib", "index.js"));

const out = process.argv[2] ?? path.join(root, "crates", "remote", "tests", "fixtures", `official-node-${clientVersion}.json`);
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "capture-"));
const server = await memwal.serve({ dataDir, apiKey: "sk-capture" });
const upstream = new URL(server.url);

let op = "connect";
const captured = [];

function bodyOf(headers, buf) {
  const ct = String(headers["content-type"] ?? "");
  if (buf.length === 0) return { kind: "empty" };
  if (ct.includes("json")) {
    try {
      return { kind: "json", value: JSON.parse(buf.toString("utf8")) };
    } catch {
      return { kind: "text", value: buf.toString("utf8") };
    }
  }
  if (ct.includes("arrow")) return { kind: "arrow", base64: buf.toString("base64") };
  return { kind: "text", value: buf.toString("utf8") };
}

const proxy = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks);
    const url = new URL(req.url, "http://x");
    const entry = {
      op,
      method: req.method,
      path: url.pathname,
      query: [...url.searchParams.entries()],
      headers: Object.fromEntries(Object.entries(req.headers).filter(([k]) => !["host", "content-length", "connection"].includes(k))),
      body: bodyOf(req.headers, body),
    };
    const fwd = http.request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } },
      (up) => {
        const rc = [];
        up.on("data", (c) => rc.push(c));
        up.on("end", () => {
          const rbody = Buffer.concat(rc);
          entry.response = { status: up.statusCode, contentType: up.headers["content-type"] ?? null, body: bodyOf(up.headers, rbody) };
          if (entry.response.body.kind === "arrow") entry.response.body = { kind: "arrow", bytes: rbody.length };
          captured.push(entry);
          res.writeHead(up.statusCode, up.headers);
          res.end(rbody);
        });
      },
    );
    fwd.on("error", (e) => {
      res.writeHead(502);
      res.end(String(e));
    });
    fwd.end(body);
  });
});
await new Promise((r) => proxy.listen(0, "127.0.0.1", r));
const hostOverride = `http://127.0.0.1:${proxy.address().port}`;

async function step(name, f) {
  op = name;
  try {
    return await f();
  } catch (e) {
    captured.push({ op: name, error: String(e?.message ?? e).slice(0, 300) });
    return undefined;
  }
}

const rows = [
  { id: 1, a: 1.5, s: "a" },
  { id: 2, a: 2.5, s: "b" },
  { id: 3, a: 3.5, s: "c" },
];
const db = await lancedb.connect("db://capture", { apiKey: "sk-capture", region: "us-east-1", hostOverride });
await step("table_names", () => db.tableNames());
await step("create_table", () => db.createTable("t", rows));
await step("create_table_exist_ok", () => db.createTable("t", rows, { existOk: true }));
await step("create_table_overwrite", () => db.createTable("t", rows, { mode: "overwrite" }));
const schema = new arrow.Schema([new arrow.Field("id", new arrow.Int64(), false), new arrow.Field("name", new arrow.Utf8(), true)]);
await step("create_empty_table", () => db.createEmptyTable("e", schema));
const t = await step("open_table", () => db.openTable("t"));
await step("schema", () => t.schema());
await step("version", () => t.version());
await step("count_rows", () => t.countRows());
await step("count_rows_filter", () => t.countRows("id > 1"));
await step("add", () => t.add([{ id: 4, a: 4.5, s: "d" }]));
await step("add_overwrite", () => t.add(rows, { mode: "overwrite" }));
await step("delete", () => t.delete("id > 2"));
await step("update_values", () => t.update({ where: "id = 1", values: { s: "x" } }));
await step("update_values_sql", () => t.update({ valuesSql: { a: "a + 1" } }));
await step("query", () => t.query().where("id > 0").select(["id", "a"]).limit(10).offset(1).toArrow());
await step("query_all", () => t.query().toArrow());
await step("to_arrow", () => t.toArrow());
await step("list_versions", () => t.listVersions());
// Vector queries (compared by golden.rs against the 0.39 capture).
const vrows = Array.from({ length: 20 }, (_, i) => ({ id: i, kind: ["a", "b"][i % 2], vector: [i, i * 0.5, 1] }));
const vt = await step("vector_create", () => db.createTable("vt", vrows));
await step("vector_search", () => vt.search([1, 2, 3]).toArrow());
await step("vector_search_options", () =>
  vt.search([1, 2, 3]).column("vector").distanceType("cosine").where("kind = 'a'").select(["id"]).limit(5).offset(1).withRowId().toArrow(),
);
await step("vector_postfilter_range", () => vt.search([1, 2, 3]).where("id > 2").postfilter().distanceRange(0.5, 100).limit(3).toArrow());
await step("vector_tuning", () => vt.search([1, 2, 3]).nprobes(30).refineFactor(2).ef(64).bypassVectorIndex().fastSearch().toArrow());
await step("vector_multi", () =>
  vt
    .vectorSearch([
      [1, 2, 3],
      [3, 2, 1],
    ])
    .limit(2)
    .toArrow(),
);
await step("vector_nearest_to", () => vt.query().nearestTo([1, 2, 3]).limit(4).toArrow());
// Index routes (compared by golden.rs).
const irows = Array.from({ length: 300 }, (_, i) => ({ id: i, vector: [i % 7, i % 5, i % 3, 1] }));
const it = await step("index_table", () => db.createTable("it", irows));
await step("create_index", () =>
  it.createIndex("vector", {
    config: lancedb.Index.ivfPq({
      numPartitions: 4,
      numSubVectors: 2,
      numBits: 8,
      distanceType: "cosine",
      maxIterations: 20,
      sampleRate: 64,
    }),
  }),
);
await step("create_index_flat", () => it.createIndex("vector", { config: lancedb.Index.ivfFlat({ numPartitions: 2 }), name: "vf" }));
await step("list_indices", () => it.listIndices());
await step("index_stats", () => it.indexStats("vf"));
await step("drop_index", () => it.dropIndex("vf"));
await step("create_index_hnsw", () =>
  it.createIndex("vector", { config: lancedb.Index.hnswSq({ m: 8, efConstruction: 40, distanceType: "dot" }), name: "vh" }),
);
await step("create_index_btree", () => it.createIndex("id", { config: lancedb.Index.btree(), name: "ib", replace: false }));
await step("merge_insert", () =>
  t
    .mergeInsert("id")
    .whenMatchedUpdateAll()
    .whenNotMatchedInsertAll()
    .execute([
      { id: 2, a: 20, s: "bb" },
      { id: 9, a: 9, s: "i" },
    ]),
);
await step("merge_insert_all_clauses", () =>
  t
    .mergeInsert("id")
    .whenMatchedUpdateAll({ where: "target.a < source.a" })
    .whenNotMatchedInsertAll()
    .whenNotMatchedBySourceDelete({ where: "id < 2" })
    .execute([{ id: 2, a: 30, s: "bb" }], { timeoutMs: 5000 }),
);
await step("merge_insert_no_index", () =>
  t
    .mergeInsert("id")
    .whenNotMatchedInsertAll()
    .useIndex(false)
    .execute([{ id: 10, a: 10, s: "j" }]),
);
await step("optimize", () => t.optimize());
await step("checkout", () => t.checkout(2));
await step("checkout_version", () => t.version());
await step("checkout_count_rows", () => t.countRows());
await step("checkout_query", () => t.query().where("id > 0").toArrow());
await step("checkout_latest", () => t.checkoutLatest());
await step("latest_count_rows", () => t.countRows());
await step("stats", () => t.stats());
await step("restore_checkout", () => t.checkout(2));
await step("restore", () => t.restore());
await step("get_lsm_stats", () => t.getLsmStats());
await step("flush_lsm", () => t.flushLsm());
await step("tags_create", async () => (await t.tags()).create("v2", 2));
await step("tags_list", async () => (await t.tags()).list());
await step("tags_update", async () => (await t.tags()).update("v2", 3));
await step("tags_version", async () => (await t.tags()).getVersion("v2"));
await step("tags_delete", async () => (await t.tags()).delete("v2"));
await step("query_projection", () => t.query().select({ twice: "id * 2", s: "s" }).toArrow());
await step("query_order_by", () => t.query().orderBy({ columnName: "a", ascending: false, nullsFirst: true }).toArrow());
await step("explain_plan", () => t.query().where("id > 1").explainPlan(true));
await step("analyze_plan", () => t.query().where("id > 1").analyzePlan());
await step("add_columns", () => t.addColumns([{ name: "b", valueSql: "a * 2" }]));
await step("alter_columns", () =>
  t.alterColumns([
    { path: "b", rename: "b2", nullable: true },
    { path: "a", dataType: "float" },
  ]),
);
await step("drop_columns", () => t.dropColumns(["b2"]));
await step("rename_table", () => db.renameTable("e", "e2"));
await step("rename_table_back", () => db.renameTable("e2", "e"));
await step("namespace_create", () => db.createNamespace(["ns1"], { mode: "exist_ok", properties: { k: "v" } }));
await step("namespace_list", () => db.listNamespaces([], { limit: 5 }));
await step("namespace_describe", () => db.describeNamespace(["ns1"]));
await step("namespace_create_table", () => db.createTable("nt", rows, ["ns1"]));
await step("namespace_table_names", () => db.tableNames(["ns1"], { limit: 5 }));
await step("namespace_drop", () => db.dropNamespace(["ns1"], { behavior: "cascade" }));
await step("drop_table", () => db.dropTable("e"));
await step("open_missing_table", () => db.openTable("missing"));

// Namespaced ids, with the default delimiter and with another one.
await step("open_table_namespaced", () => db.openTable("t", ["ns1", "ns2"]));
const db2 = await lancedb.connect("db://capture", {
  apiKey: "sk-capture",
  region: "us-east-1",
  hostOverride,
  clientConfig: { idDelimiter: ".", extraHeaders: { "x-extra": "1" }, userId: "user-7" },
});
await step("open_table_delimiter", () => db2.openTable("t", ["ns1"]));
const db3 = await lancedb.connect("db://capture", { apiKey: "sk-capture", region: "us-east-1", hostOverride }, undefined, async () => ({
  "x-from-provider": "p1",
}));
await step("header_provider", () => db3.tableNames());

await server.close();
proxy.close();
fs.mkdirSync(path.dirname(out), { recursive: true });
fs.writeFileSync(
  out,
  `${JSON.stringify(
    {
      client: `@lancedb/lancedb ${clientVersion}`,
      node: process.version,
      captured: captured.filter((c) => c.op !== "connect" || c.method),
    },
    null,
    1,
  )}\n`,
);
console.log(`captured ${captured.length} requests from @lancedb/lancedb ${clientVersion} into ${path.relative(root, out)}`);
for (const c of captured)
  console.log(
    c.op,
    c.error ? `ERROR ${c.error}` : `${c.method} ${c.path} ${c.query.map(([k, v]) => `${k}=${v}`).join("&")} -> ${c.response.status}`,
  );
process.exit(0);
