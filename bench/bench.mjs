// npm run bench [workloads]: every workload for memwal and @lancedb/lancedb 0.39.0,
// each in its own process; prints a markdown table and writes results/
// (bench.md, bench.json, latency.svg).
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";

const runs = [
  ["fsync", "fsync"],
  ["memwal", "A"],
  ["lancedb", "A"],
  ["memwal", "B"],
  ["lancedb", "B"],
  ["memwal", "Bn"],
  ["lancedb", "Bn"],
  ["memwal", "C"],
  ["lancedb", "C"],
  ["memwal-server", "D1"],
  ["memwal-server", "D8"],
  ["memwal-server", "D8proc"],
  ["memwal-server", "Ddirect"],
  ["lancedb", "Dlsm"],
  ["bw", "bw"],
  ["memwal", "E100k"],
  ["lancedb", "E100k"],
  ["memwal", "E1m"],
  ["lancedb", "E1m"],
  ["memwal", "F"],
  ["lancedb", "F"],
  ["lancedb-lsm", "F"],
  ["memwal", "G100k"],
  ["lancedb", "G100k"],
  ["memwal", "H"],
  ["lancedb", "H"],
  ["memwal", "V"],
  ["lancedb", "V"],
  ["memwal", "S"],
  ["lancedb", "S"],
  ["memwal", "R"],
  ["lancedb", "R"],
  ["memwal", "G1m"],
  ["lancedb", "G1m"],
  ["memwal", "Klocal"],
  ["memwal", "Ks3"],
  ["lancedb", "Klocal"],
  ["lancedb", "Ks3"],
  ["memwal-server", "KDlocal"],
  ["memwal-server", "KDs3"],
  ["memwal-server", "KDs3wal"],
  ["memwal", "I100k"],
  ["memwal-server", "I100k"],
  ["lancedb", "I100k"],
  ["tantivy", "I100k"],
  ["memwal", "I1m"],
  ["memwal-server", "I1m"],
  ["lancedb", "I1m"],
  ["tantivy", "I1m"],
];
const only = process.argv[2];
// D8proc runs the memwal-server binary: build it (incremental) where cargo puts it.
if (!only || only.split(",").some((w) => w === "D8proc" || w === "V")) {
  const target = process.env.CARGO_TARGET_DIR ?? new URL("../target", import.meta.url).pathname;
  process.stdout.write("building memwal-server (cargo build --release -p memwal-server) ... ");
  execFileSync("cargo", ["build", "--release", "-p", "memwal-server", "--quiet"], {
    cwd: new URL("..", import.meta.url).pathname,
    stdio: ["ignore", "ignore", "inherit"],
  });
  process.env.MEMWAL_SERVER_BIN = `${target}/release/memwal-server`;
  console.log("done");
}
// K runs against an S3 API on 127.0.0.1: moto_server (scripts/test.sh installs it), stopped with this process.
if (!only || only.split(",").some((w) => w.startsWith("K"))) {
  if (!process.env.MEMWAL_TEST_S3_ENDPOINT) {
    const moto = new URL("../scripts/moto.sh", import.meta.url).pathname;
    process.env.MEMWAL_TEST_S3_ENDPOINT = execFileSync("bash", [moto, "0", String(process.pid)], { encoding: "utf8" }).trim();
  }
}
// I runs tantivy from PyPI in a venv of its own, pinned; a failed install fails the bench.
if (!only || only.split(",").some((w) => w.startsWith("I"))) {
  const venv = new URL(".venv-tantivy", import.meta.url).pathname;
  if (!fs.existsSync(`${venv}/bin/python`)) execFileSync("python3", ["-m", "venv", venv], { stdio: "inherit" });
  execFileSync(`${venv}/bin/python`, ["-m", "pip", "install", "--quiet", "--disable-pip-version-check", "tantivy==0.27.0"], {
    stdio: "inherit",
  });
}
const results = {};
for (const [engine, wl] of runs) {
  if (only && !only.split(",").includes(wl)) continue;
  process.stdout.write(`running ${engine} ${wl} ... `);
  const t0 = Date.now();
  const out = execFileSync(process.execPath, ["--max-old-space-size=16000", "worker.mjs", engine, wl], {
    encoding: "utf8",
    maxBuffer: 1 << 24,
  });
  const line = out.trim().split("\n").pop();
  const r = JSON.parse(line);
  results[`${engine}:${wl}`] = r;
  // Kept as runs finish, so a long run that is stopped still leaves its figures.
  fs.mkdirSync("results", { recursive: true });
  fs.writeFileSync("results/partial.json", JSON.stringify(results, null, 2));
  console.log(`${((Date.now() - t0) / 1000).toFixed(1)} s ${r.error ? `ERROR ${r.error}` : ""}`);
}
const g = (k, f) => (results[k] && results[k][f] !== undefined ? results[k][f] : NaN);
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : "n/a");
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : "n/a");
const e = (k, v, f) => (results[k]?.[v] ? results[k][v][f] : NaN);
const eRows = [];
for (const [wl, n] of [
  ["E100k", "100k"],
  ["E1m", "1M"],
]) {
  for (const v of ["random", "random_filter10", "clustered", "clustered_filter10"]) {
    const m = `memwal:${wl}`,
      p = `lancedb:${wl}`;
    eRows.push([
      `E: flat top-10 L2, ${n} x 128-d ${v.replace("_filter10", ", filter 10%")}: p50 / p99 ms, q/s`,
      `${f2(e(m, v, "p50_ms"))} / ${f2(e(m, v, "p99_ms"))}, ${f1(e(m, v, "qps"))}`,
      `${f2(e(p, v, "p50_ms"))} / ${f2(e(p, v, "p99_ms"))}, ${f1(e(p, v, "qps"))}`,
      `${f2(e(m, v, "qps") / e(p, v, "qps"))}x q/s`,
    ]);
  }
  eRows.push([
    `E: ${n} random, scan GB/s (rows x 512 B / p50) vs memory (memcpy read ${f1(g("bw:bw", "memcpy_read_gb_s"))} GB/s)`,
    f1(e(`memwal:${wl}`, "random", "scan_gb_s")),
    f2(e(`lancedb:${wl}`, "random", "scan_gb_s")),
    `${f2(e(`memwal:${wl}`, "random", "scan_gb_s") / g("bw:bw", "memcpy_read_gb_s"))} of memcpy`,
  ]);
}
const fr = (k) =>
  `${results[k]?.next_query_found ?? "n/a"}/${results[k]?.rounds ?? "n/a"} next query, lag p50 ${f2(g(k, "p50_ms"))} ms, p99 ${f2(g(k, "p99_ms"))} ms${results[k]?.never_found_in_10s ? `, ${results[k].never_found_in_10s} never (10 s)` : ""}${results[k]?.error ? ` ERROR ${results[k].error.slice(0, 80)}` : ""}`;
eRows.push(["F: 200 new vectors upserted, found by a search: memwal MemWAL | peer standard", fr("memwal:F"), fr("lancedb:F"), ""]);
eRows.push(["F: peer LSM path (useLsm)", "", fr("lancedb-lsm:F"), ""]);
// G: IVF_PQ, same parameters; the best q/s among the settings reaching each recall floor.
const gs = (k, data, floor) => results[k]?.[data]?.[floor];
const gCell = (x) =>
  x === undefined
    ? "n/a"
    : x
      ? `${f1(x.qps)} q/s (p50 ${f2(x.p50_ms)} / p99 ${f2(x.p99_ms)} ms; nprobes ${x.nprobes}, refine ${x.refine || "-"}; recall ${f2(x.recall)})`
      : "not reached";
for (const [wl, n] of [
  ["G100k", "100k"],
  ["G1m", "1M"],
]) {
  for (const data of ["random", "clustered"]) {
    const m = `memwal:${wl}`,
      p = `lancedb:${wl}`;
    const bm = results[m]?.[data]?.build_s,
      bp = results[p]?.[data]?.build_s;
    eRows.push([
      `G: IVF_PQ build, ${n} x 128-d ${data} (${results[m]?.partitions ?? "?"} partitions, 16 sub-vectors): s, peak RSS MB`,
      `${f1(bm)} s, ${f1(results[m]?.[data]?.rss_after_build_mb)}`,
      `${f1(bp)} s, ${f1(results[p]?.[data]?.rss_after_build_mb)}`,
      `${f2(bp / bm)}x faster`,
    ]);
    for (const floor of ["at90", "at95"]) {
      const a = gs(m, data, floor),
        b = gs(p, data, floor);
      eRows.push([
        `G: IVF_PQ ${n} ${data}, recall@10 >= ${floor === "at90" ? "0.90" : "0.95"}: best q/s`,
        gCell(a),
        gCell(b),
        a && b ? `${f2(a.qps / b.qps)}x q/s` : "",
      ]);
    }
    const hm = results[m]?.[data]?.hnsw_build_s,
      hp = results[p]?.[data]?.hnsw_build_s;
    eRows.push([
      `G: IVF_HNSW_SQ build, ${n} ${data} (m 20, efConstruction 150): s, peak RSS MB`,
      `${f1(hm)} s, ${f1(results[m]?.[data]?.hnsw_rss_mb)}`,
      `${f1(hp)} s, ${f1(results[p]?.[data]?.hnsw_rss_mb)}`,
      `${f2(hp / hm)}x faster`,
    ]);
    for (const floor of ["hnsw_at90", "hnsw_at95"]) {
      const a = gs(m, data, floor),
        b = gs(p, data, floor);
      const cell = (x) => (x ? gCell(x).replace("refine", `ef ${x.ef}, refine`) : gCell(x));
      eRows.push([
        `G: IVF_HNSW_SQ ${n} ${data}, recall@10 >= ${floor === "hnsw_at90" ? "0.90" : "0.95"}: best q/s`,
        cell(a),
        cell(b),
        a && b ? `${f2(a.qps / b.qps)}x q/s` : "",
      ]);
    }
  }
}
// R: IVF_RQ (and IVF_PQ for reference) on 100k x 64-d Gaussian clusters: build, and each setting's recall and q/s.
for (const name of ["IVF_PQ", "IVF_RQ 1 bit", "IVF_RQ 2 bit", "IVF_RQ 4 bit"]) {
  const a = results["memwal:R"]?.[name],
    b = results["lancedb:R"]?.[name];
  if (!a && !b) continue;
  const cell = (x, i) =>
    x?.error
      ? `ERROR ${x.error.slice(0, 60)}`
      : x
        ? `recall ${f2(x.settings[i].recall)}, ${f1(x.settings[i].qps)} q/s (p50 ${f2(x.settings[i].p50_ms)} / p99 ${f2(x.settings[i].p99_ms)} ms)`
        : "n/a";
  eRows.push([
    `R: ${name} build, 100k x 64-d, 256 clusters: s`,
    f2(a?.build_s),
    f2(b?.build_s),
    a?.build_s && b?.build_s ? `${f2(b.build_s / a.build_s)}x faster` : "",
  ]);
  (a ?? b).settings?.forEach((st, i) => {
    const qa = a?.settings?.[i]?.qps,
      qb = b?.settings?.[i]?.qps;
    eRows.push([
      `R: ${name}, nprobes ${st.nprobes}, refine ${st.refine || "-"}: recall@10, q/s`,
      cell(a, i),
      cell(b, i),
      qa && qb ? `${f2(qa / qb)}x q/s` : "",
    ]);
  });
}
const hCell = (k) =>
  results[k]
    ? `recall@10 ${f2(g(k, "recall_at10"))} (static, retrained: ${f2(g(k, "end_static_recall_at10"))}), new row first ${f2(g(k, "fresh_row_top1"))}, updated row first ${f2(g(k, "updated_row_top1"))}, p50 ${f2(g(k, "p50_ms"))} ms${results[k].fast_search_recall_at10 != null ? `; fastSearch recall ${f2(g(k, "fast_search_recall_at10"))}, new row first ${f2(g(k, "fast_search_fresh_row_top1"))}` : ""}${results[k].error ? ` ERROR ${results[k].error.slice(0, 80)}` : ""}`
    : "n/a";
eRows.push([
  "H: IVF_PQ 100k under 200-row upserts (nprobes 20, refine 10): memwal MemWAL / peer standard",
  hCell("memwal:H"),
  hCell("lancedb:H"),
  "",
]);
// V: served against local search, through the whole stack (issue 28's target: served <= 1.3x local + one round trip).
const vr = (where, f) => results["memwal:V"]?.[where]?.[f];
const vp = (x) => `${f2(x?.p50_ms)} / ${f2(x?.p99_ms)}`;
eRows.push([
  "V: IVF_PQ top-10, 100k (nprobes 20, refine 10): local p50 / p99 ms",
  vp(results["memwal:V"]?.local),
  vp(results["lancedb:V"]?.local),
  `${f2(results["lancedb:V"]?.local?.p50_ms / results["memwal:V"]?.local?.p50_ms)}x faster`,
]);
for (const [where, label] of [
  ["proc", "memwal-server process"],
  ["inproc", "serve() in the client's process"],
]) {
  eRows.push(
    [
      `V: the same search served (${label}, our client): nothing buffered | ${f1(vr(where, "buffered_rows"))} rows buffered`,
      `${vp(vr(where, "served"))} | ${vp(vr(where, "served_buffered"))}`,
      "",
      `target ${f2(vr(where, "target_ms"))} ms (1.3x local + round trip ${f2(vr(where, "rtt")?.p50_ms)})`,
    ],
    [
      `V: filtered scan cat = 3, limit 10 (${label}): local | served | served buffered, p50 ms`,
      `${f2(results["memwal:V"]?.local_scan?.p50_ms)} | ${f2(vr(where, "served_scan")?.p50_ms)} | ${f2(vr(where, "served_buffered_scan")?.p50_ms)}`,
      f2(results["lancedb:V"]?.local_scan?.p50_ms),
      `target ${f2(vr(where, "target_scan_ms"))} ms`,
    ],
    [
      `V: full-text search, 1 term, top 10 (${label}): local | served | served buffered, p50 ms`,
      `${f2(results["memwal:V"]?.local_fts?.p50_ms)} | ${f2(vr(where, "served_fts")?.p50_ms)} | ${f2(vr(where, "served_buffered_fts")?.p50_ms)}`,
      f2(results["lancedb:V"]?.local_fts?.p50_ms),
      `target ${f2(vr(where, "target_fts_ms"))} ms`,
    ],
  );
}
// S: filtered reads on 1M rows, without and with a BTREE on id.
eRows.push([
  "S: BTREE build on id, 1M rows: s",
  f2(g("memwal:S", "build_s")),
  f2(g("lancedb:S", "build_s")),
  `${f2(g("lancedb:S", "build_s") / g("memwal:S", "build_s"))}x faster`,
]);
for (const [shape, label] of [
  ["point", "query id = x"],
  ["in5", "query id IN (5 ids)"],
  ["range100", "query x <= id < x + 100"],
  ["count_point", "countRows(id = x)"],
]) {
  for (const how of ["scan", "btree"]) {
    const k = `${how}_${shape}`;
    const cell = (r) => `${f2(e(r, k, "p50_ms"))} / ${f2(e(r, k, "p99_ms"))}, ${f1(e(r, k, "qps"))}`;
    eRows.push([
      `S: ${label}, ${how === "scan" ? "no index" : "BTREE"}: p50 / p99 ms, q/s`,
      cell("memwal:S"),
      cell("lancedb:S"),
      `${f2(e("memwal:S", k, "qps") / e("lancedb:S", k, "qps"))}x q/s`,
    ]);
  }
}
const rows = [
  [
    "A: 100k-row upsert into 100k rows, rows/s",
    f1(g("memwal:A", "rows_per_s")),
    f1(g("lancedb:A", "rows_per_s")),
    `${f2(g("memwal:A", "rows_per_s") / g("lancedb:A", "rows_per_s"))}x`,
  ],
  [
    "A: peak RSS MB",
    f1(g("memwal:A", "peak_rss_mb")),
    f1(g("lancedb:A", "peak_rss_mb")),
    `${f2(g("memwal:A", "peak_rss_mb") / g("lancedb:A", "peak_rss_mb"))}x`,
  ],
  [
    "B: 200-row upserts into 100k, p50 ms",
    f2(g("memwal:B", "p50_ms")),
    f2(g("lancedb:B", "p50_ms")),
    `${f2(g("lancedb:B", "p50_ms") / g("memwal:B", "p50_ms"))}x faster`,
  ],
  ["B: p99 ms", f2(g("memwal:B", "p99_ms")), f2(g("lancedb:B", "p99_ms")), ""],
  [
    "Bn: 200-row upserts of narrow rows (no vector) into 100k, p50 ms",
    f2(g("memwal:Bn", "p50_ms")),
    f2(g("lancedb:Bn", "p50_ms")),
    `${f2(g("lancedb:Bn", "p50_ms") / g("memwal:Bn", "p50_ms"))}x faster`,
  ],
  ["Bn: p99 ms", f2(g("memwal:Bn", "p99_ms")), f2(g("lancedb:Bn", "p99_ms")), ""],
  [
    "C: 200-row upserts into 1M, p50 ms",
    f2(g("memwal:C", "p50_ms")),
    f2(g("lancedb:C", "p50_ms")),
    `${f2(g("lancedb:C", "p50_ms") / g("memwal:C", "p50_ms"))}x faster`,
  ],
  [
    "C/B p50 (cost growth with table size)",
    f2(g("memwal:C", "p50_ms") / g("memwal:B", "p50_ms")),
    f2(g("lancedb:C", "p50_ms") / g("lancedb:B", "p50_ms")),
    "",
  ],
  [
    "D: MemWAL 1 client p50 / p99 ms",
    `${f2(g("memwal-server:D1", "p50_ms"))} / ${f2(g("memwal-server:D1", "p99_ms"))}`,
    `LSM ${f2(g("lancedb:Dlsm", "p50_ms"))} / ${f2(g("lancedb:Dlsm", "p99_ms"))}`,
    "",
  ],
  ["D: MemWAL 8 clients p50 / p99 ms", `${f2(g("memwal-server:D8", "p50_ms"))} / ${f2(g("memwal-server:D8", "p99_ms"))}`, "", ""],
  [
    "D: same, server in its own process: p50 / p99 ms, upserts/s",
    `${f2(g("memwal-server:D8proc", "p50_ms"))} / ${f2(g("memwal-server:D8proc", "p99_ms"))}, ${f1(g("memwal-server:D8proc", "upserts_per_s"))}`,
    "",
    "",
  ],
  [
    "D: MemWAL 8 clients upserts/s vs direct merge (same server)",
    f1(g("memwal-server:D8", "upserts_per_s")),
    `direct ${f1(1000 / g("memwal-server:Ddirect", "p50_ms"))}`,
    `${f2(g("memwal-server:D8", "upserts_per_s") / (1000 / g("memwal-server:Ddirect", "p50_ms")))}x`,
  ],
  [
    "D: 1-client MemWAL p50 vs disk fdatasync (4 KiB append)",
    f2(g("memwal-server:D1", "p50_ms")),
    `fdatasync ${f2(g("fsync:fsync", "fdatasync_ms"))} ms`,
    `${f2(g("memwal-server:D1", "p50_ms") / g("fsync:fsync", "fdatasync_ms"))}x`,
  ],
  [
    "D: same vs fdatasync in place (over preallocated space: a floor for reference)",
    f2(g("memwal-server:D1", "p50_ms")),
    `fdatasync ${f2(g("fsync:fsync", "fdatasync_inplace_ms"))} ms`,
    `${f2(g("memwal-server:D1", "p50_ms") / g("fsync:fsync", "fdatasync_inplace_ms"))}x`,
  ],
  [
    "D: counts exact / countRows sees all (MemWAL 8c | peer LSM)",
    `${results["memwal-server:D8"]?.counts_exact} / ${results["memwal-server:D8"]?.count_rows_sees_all}`,
    `${results["lancedb:Dlsm"]?.counts_exact} / ${results["lancedb:Dlsm"]?.count_rows_sees_all}`,
    "",
  ],
];
const k = (e, w, f) => g(`${e}:${w}`, f);
eRows.push(
  [
    "K: 200-row upserts into 20k, table on S3 (moto): p50 ms, rows/s",
    `${f2(k("memwal", "Ks3", "upsert_p50_ms"))}, ${f1(k("memwal", "Ks3", "rows_per_s"))}`,
    `${f2(k("lancedb", "Ks3", "upsert_p50_ms"))}, ${f1(k("lancedb", "Ks3", "rows_per_s"))}`,
    `${f2(k("lancedb", "Ks3", "upsert_p50_ms") / k("memwal", "Ks3", "upsert_p50_ms"))}x faster`,
  ],
  [
    "K: same on local disk: p50 ms, rows/s",
    `${f2(k("memwal", "Klocal", "upsert_p50_ms"))}, ${f1(k("memwal", "Klocal", "rows_per_s"))}`,
    `${f2(k("lancedb", "Klocal", "upsert_p50_ms"))}, ${f1(k("lancedb", "Klocal", "rows_per_s"))}`,
    `S3 / local p50: ${f2(k("memwal", "Ks3", "upsert_p50_ms") / k("memwal", "Klocal", "upsert_p50_ms"))} vs peer ${f2(k("lancedb", "Ks3", "upsert_p50_ms") / k("lancedb", "Klocal", "upsert_p50_ms"))}`,
  ],
  [
    "K: flat top-10 over S3, 20k rows: cold first query ms / warm p50 ms",
    `${f2(k("memwal", "Ks3", "search_cold_ms"))} / ${f2(k("memwal", "Ks3", "search_p50_ms"))}`,
    `${f2(k("lancedb", "Ks3", "search_cold_ms"))} / ${f2(k("lancedb", "Ks3", "search_p50_ms"))}`,
    `${f2(k("lancedb", "Ks3", "search_p50_ms") / k("memwal", "Ks3", "search_p50_ms"))}x faster warm`,
  ],
  [
    "K: MemWAL 1 client p50 / p99 ms, tables on S3 (WAL local) | on local disk",
    `${f2(k("memwal-server", "KDs3", "p50_ms"))} / ${f2(k("memwal-server", "KDs3", "p99_ms"))}`,
    `local ${f2(k("memwal-server", "KDlocal", "p50_ms"))} / ${f2(k("memwal-server", "KDlocal", "p99_ms"))}`,
    `${f2(k("memwal-server", "KDs3", "p50_ms") / k("memwal-server", "KDlocal", "p50_ms"))}x of local p50`,
  ],
  [
    "K: MemWAL 1 client p50 / p99 ms, tables and WAL on S3 (a create-only put per group commit)",
    `${f2(k("memwal-server", "KDs3wal", "p50_ms"))} / ${f2(k("memwal-server", "KDs3wal", "p99_ms"))}`,
    "",
    `${f2(k("memwal-server", "KDs3wal", "p50_ms") / k("memwal-server", "KDlocal", "p50_ms"))}x of local p50`,
  ],
);
for (const [wl, n] of [
  ["I100k", "100k"],
  ["I1m", "1M"],
]) {
  const cell = (e, kind) => `${f2(k(e, wl, kind)?.p50_ms)} / ${f2(k(e, wl, kind)?.p99_ms)}, ${f1(k(e, wl, kind)?.qps)}`;
  const qps = (e, kind) => k(e, wl, kind)?.qps;
  for (const [kind, label] of [
    ["single", "1 term"],
    ["or3", "3 terms OR"],
    ["and3", "3 terms AND"],
    ["phrase", "3-word phrase"],
  ]) {
    eRows.push([
      `I: FTS top-10, ${n} docs x ~50 words, ${label}: p50 / p99 ms, q/s (memwal local; served)`,
      `${cell("memwal", kind)}; served ${cell("memwal-server", kind)}`,
      cell("lancedb", kind),
      `${f2(qps("memwal", kind) / qps("lancedb", kind))}x peer q/s; tantivy ${cell("tantivy", kind)} (memwal ${f2(qps("memwal", kind) / qps("tantivy", kind))}x)`,
    ]);
  }
  eRows.push([
    `I: FTS index build, ${n} docs (positions): docs/s (memwal local; served)`,
    `${f1(k("memwal", wl, "build_docs_per_s"))}; served ${f1(k("memwal-server", wl, "build_docs_per_s"))}`,
    f1(k("lancedb", wl, "build_docs_per_s")),
    `${f2(k("memwal", wl, "build_docs_per_s") / k("lancedb", wl, "build_docs_per_s"))}x peer; tantivy ${f1(k("tantivy", wl, "build_docs_per_s"))}`,
  ]);
  const fresh = (e) => {
    const x = k(e, wl, "freshness");
    return x ? `${x.next_query_found}/${x.rounds} next query, lag p50 ${f2(x.lag_p50_ms)} / p99 ${f2(x.lag_p99_ms)} ms` : "n/a";
  };
  eRows.push([
    `I: ${n}, write one doc, found by a query: memwal served (MemWAL upsert) vs peer local (add)`,
    fresh("memwal-server"),
    fresh("lancedb"),
    "",
  ]);
}
rows.push(...eRows);
let md = `| measure | memwal | @lancedb/lancedb 0.39.0 | ratio |\n|---|---|---|---|\n`;
for (const r of rows) if (!r.slice(1).every((c) => c === "" || /n\/a|undefined/.test(c))) md += `| ${r.join(" | ")} |\n`;
md += `\nMachine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? "cpu"}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, ${new Date().toISOString()}\n`;
fs.mkdirSync("results", { recursive: true });
fs.writeFileSync("results/bench.json", JSON.stringify(results, null, 2));
fs.writeFileSync("results/bench.md", md);
fs.writeFileSync("results/latency.svg", latencySvg(results));
console.log(`\n${md}`);

/**
 * Per-call latency distributions, memwal beside the peer, on a log axis:
 * a box from p25 to p75, whiskers p5..p99, a mark at p50, a dot at the max.
 */
function latencySvg(res) {
  const series = [];
  const add = (label, k, sub) => {
    const r = sub ? res[k]?.[sub] : res[k];
    if (r?.lat?.length) series.push({ label, lat: [...r.lat].sort((a, b) => a - b), memwal: k.startsWith("memwal") });
  };
  for (const [wl, n] of [
    ["E100k", "100k"],
    ["E1m", "1M"],
  ]) {
    for (const v of ["random", "random_filter10", "clustered"]) {
      add(`E ${n} ${v} memwal`, `memwal:${wl}`, v);
      add(`E ${n} ${v} peer`, `lancedb:${wl}`, v);
    }
  }
  add("B upsert 200 into 100k memwal", "memwal:B");
  add("B upsert 200 into 100k peer", "lancedb:B");
  add("C upsert 200 into 1M memwal", "memwal:C");
  add("C upsert 200 into 1M peer", "lancedb:C");
  add("D1 MemWAL upsert memwal", "memwal-server:D1");
  add("F freshness memwal", "memwal:F");
  add("F freshness peer standard", "lancedb:F");
  add("F freshness peer LSM", "lancedb-lsm:F");
  const W = 900,
    left = 260,
    right = 20,
    rowH = 22,
    top = 30;
  const H = top + series.length * rowH + 40;
  const lo = 0.1,
    hi = 10_000;
  const x = (ms) =>
    left + ((Math.log10(Math.min(hi, Math.max(lo, ms))) - Math.log10(lo)) / (Math.log10(hi) - Math.log10(lo))) * (W - left - right);
  const q = (a, p) => a[Math.min(a.length - 1, Math.floor(p * a.length))];
  let svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" font-family="sans-serif" font-size="11">\n`;
  svg += `<text x="${left}" y="16" font-size="13">Latency per call (ms, log scale): box p25-p75, whiskers p5-p99, bar p50, dot max</text>\n`;
  for (const t of [0.1, 1, 10, 100, 1000, 10000]) {
    svg += `<line x1="${x(t)}" y1="${top - 6}" x2="${x(t)}" y2="${H - 30}" stroke="#ddd"/><text x="${x(t)}" y="${H - 16}" text-anchor="middle">${t}</text>\n`;
  }
  series.forEach((s, i) => {
    const y = top + i * rowH + rowH / 2;
    const c = s.memwal ? "#1f77b4" : "#d62728";
    svg += `<text x="${left - 8}" y="${y + 4}" text-anchor="end">${s.label}</text>`;
    svg += `<line x1="${x(q(s.lat, 0.05))}" y1="${y}" x2="${x(q(s.lat, 0.99))}" y2="${y}" stroke="${c}"/>`;
    svg += `<rect x="${x(q(s.lat, 0.25))}" y="${y - 6}" width="${Math.max(1, x(q(s.lat, 0.75)) - x(q(s.lat, 0.25)))}" height="12" fill="${c}" fill-opacity="0.35" stroke="${c}"/>`;
    svg += `<line x1="${x(q(s.lat, 0.5))}" y1="${y - 7}" x2="${x(q(s.lat, 0.5))}" y2="${y + 7}" stroke="${c}" stroke-width="2"/>`;
    svg += `<circle cx="${x(s.lat[s.lat.length - 1])}" cy="${y}" r="2" fill="${c}"/>\n`;
  });
  return `${svg}</svg>\n`;
}
