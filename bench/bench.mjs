// npm run bench: every workload for memwal and @lancedb/lancedb 0.31.0,
// each in its own process; prints a markdown table and writes results/.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";

const runs = [
  ["fsync", "fsync"],
  ["memwal", "A"], ["lancedb", "A"],
  ["memwal", "B"], ["lancedb", "B"],
  ["memwal", "C"], ["lancedb", "C"],
  ["memwal-server", "D1"], ["memwal-server", "D8"], ["memwal-server", "D8proc"], ["memwal-server", "Ddirect"], ["lancedb", "Dlsm"],
];
const only = process.argv[2];
// D8proc runs the memwal-server binary: build it (incremental) where cargo puts it.
if (!only || only.split(",").includes("D8proc")) {
  const target = process.env.CARGO_TARGET_DIR ?? new URL("../target", import.meta.url).pathname;
  process.stdout.write("building memwal-server (cargo build --release -p memwal-server) ... ");
  execFileSync("cargo", ["build", "--release", "-p", "memwal-server", "--quiet"], { cwd: new URL("..", import.meta.url).pathname, stdio: ["ignore", "ignore", "inherit"] });
  process.env.MEMWAL_SERVER_BIN = `${target}/release/memwal-server`;
  console.log("done");
}
const results = {};
for (const [engine, wl] of runs) {
  if (only && !only.split(",").includes(wl)) continue;
  process.stdout.write(`running ${engine} ${wl} ... `);
  const t0 = Date.now();
  const out = execFileSync(process.execPath, ["--max-old-space-size=16000", "worker.mjs", engine, wl], { encoding: "utf8", maxBuffer: 1 << 24 });
  const line = out.trim().split("\n").pop();
  const r = JSON.parse(line);
  results[`${engine}:${wl}`] = r;
  console.log(`${((Date.now() - t0) / 1000).toFixed(1)} s ${r.error ? "ERROR " + r.error : ""}`);
}
const g = (k, f) => (results[k] && results[k][f] !== undefined ? results[k][f] : NaN);
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : "n/a");
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : "n/a");
const rows = [
  ["A: 100k-row upsert into 100k rows, rows/s", f1(g("memwal:A", "rows_per_s")), f1(g("lancedb:A", "rows_per_s")), f2(g("memwal:A", "rows_per_s") / g("lancedb:A", "rows_per_s")) + "x"],
  ["A: peak RSS MB", f1(g("memwal:A", "peak_rss_mb")), f1(g("lancedb:A", "peak_rss_mb")), f2(g("memwal:A", "peak_rss_mb") / g("lancedb:A", "peak_rss_mb")) + "x"],
  ["B: 200-row upserts into 100k, p50 ms", f2(g("memwal:B", "p50_ms")), f2(g("lancedb:B", "p50_ms")), f2(g("lancedb:B", "p50_ms") / g("memwal:B", "p50_ms")) + "x faster"],
  ["B: p99 ms", f2(g("memwal:B", "p99_ms")), f2(g("lancedb:B", "p99_ms")), ""],
  ["C: 200-row upserts into 1M, p50 ms", f2(g("memwal:C", "p50_ms")), f2(g("lancedb:C", "p50_ms")), f2(g("lancedb:C", "p50_ms") / g("memwal:C", "p50_ms")) + "x faster"],
  ["C/B p50 (cost growth with table size)", f2(g("memwal:C", "p50_ms") / g("memwal:B", "p50_ms")), f2(g("lancedb:C", "p50_ms") / g("lancedb:B", "p50_ms")), ""],
  ["D: MemWAL 1 client p50 / p99 ms", `${f2(g("memwal-server:D1", "p50_ms"))} / ${f2(g("memwal-server:D1", "p99_ms"))}`, `LSM ${f2(g("lancedb:Dlsm", "p50_ms"))} / ${f2(g("lancedb:Dlsm", "p99_ms"))}`, ""],
  ["D: MemWAL 8 clients p50 / p99 ms", `${f2(g("memwal-server:D8", "p50_ms"))} / ${f2(g("memwal-server:D8", "p99_ms"))}`, "", ""],
  ["D: same, server in its own process: p50 / p99 ms, upserts/s", `${f2(g("memwal-server:D8proc", "p50_ms"))} / ${f2(g("memwal-server:D8proc", "p99_ms"))}, ${f1(g("memwal-server:D8proc", "upserts_per_s"))}`, "", ""],
  ["D: MemWAL 8 clients upserts/s vs direct merge (same server)", f1(g("memwal-server:D8", "upserts_per_s")), `direct ${f1(1000 / g("memwal-server:Ddirect", "p50_ms"))}`, f2(g("memwal-server:D8", "upserts_per_s") / (1000 / g("memwal-server:Ddirect", "p50_ms"))) + "x"],
  ["D: 1-client MemWAL p50 vs disk fdatasync (4 KiB append)", f2(g("memwal-server:D1", "p50_ms")), `fdatasync ${f2(g("fsync:fsync", "fdatasync_ms"))} ms`, f2(g("memwal-server:D1", "p50_ms") / g("fsync:fsync", "fdatasync_ms")) + "x"],
  ["D: same vs fdatasync in place (over preallocated space: a floor for reference)", f2(g("memwal-server:D1", "p50_ms")), `fdatasync ${f2(g("fsync:fsync", "fdatasync_inplace_ms"))} ms`, f2(g("memwal-server:D1", "p50_ms") / g("fsync:fsync", "fdatasync_inplace_ms")) + "x"],
  ["D: counts exact / countRows sees all (MemWAL 8c | peer LSM)", `${results["memwal-server:D8"]?.counts_exact} / ${results["memwal-server:D8"]?.count_rows_sees_all}`, `${results["lancedb:Dlsm"]?.counts_exact} / ${results["lancedb:Dlsm"]?.count_rows_sees_all}`, ""],
];
let md = `| measure | memwal | @lancedb/lancedb 0.31.0 | ratio |\n|---|---|---|---|\n`;
for (const r of rows) md += `| ${r.join(" | ")} |\n`;
md += `\nMachine: ${os.cpus().length} x ${os.cpus()[0]?.model ?? "cpu"}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, ${new Date().toISOString()}\n`;
fs.mkdirSync("results", { recursive: true });
fs.writeFileSync("results/bench.json", JSON.stringify(results, null, 2));
fs.writeFileSync("results/bench.md", md);
console.log("\n" + md);
