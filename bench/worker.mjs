// One measurement in a fresh process (so peak RSS is its own):
//   node worker.mjs <engine> <workload>
// engine: memwal | lancedb | fsync | bw ; workload: A | B | Bn | C | D1 | D8 | Ddirect | Dlsm | fsync | E100k | E1m | F | G100k | G1m | H | R | S | bw
//   | Klocal | Ks3 | KDlocal | KDs3 | KDs3wal (K: moto S3 at MEMWAL_TEST_S3_ENDPOINT, started by bench.mjs)
//   | I100k | I1m (full-text search, fts.mjs; engines memwal | memwal-server | lancedb | tantivy)
// Prints one JSON line. Data generation and IPC encoding are outside the timed part.
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as os from "node:os";
import * as path from "node:path";
import { fullText } from "./fts.mjs";
import { rowMaker } from "./rows.mjs";

const require = createRequire(import.meta.url);
// The CommonJS build, as @lancedb/lancedb loads it (the ESM build's classes fail its instanceof checks).
const arrow = require("apache-arrow");
const { Field, FixedSizeList, Float32, Table, Utf8, makeData, makeVector, tableFromIPC, tableToIPC, vectorFromArray } = arrow;
const [engine, workload] = process.argv.slice(2);
const DIM = 128;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), `bench-${engine}-${workload}-`));

const { rnd, table: rowsTable } = rowMaker(arrow, DIM);

// Round-trip once so schema and batches agree exactly (the peer checks).
const rows = (ids) => tableFromIPC(tableToIPC(rowsTable(ids), "stream"));
/** The same rows without the vector (id, a, s: Bn's narrow rows). */
const narrowRows = (ids) => tableFromIPC(tableToIPC(rowsTable(ids).select(["id", "a", "s"]), "stream"));

const range = (a, b) => Array.from({ length: b - a }, (_, i) => a + i);

/** 200-row batches: half existing ids in [0, existing), half new. */
function batches(count, size, existing, newBase) {
  const out = [];
  for (let i = 0; i < count; i++) {
    const ids = new Set();
    while (ids.size < size / 2) ids.add(Math.floor(rnd() * existing));
    for (let j = 0; j < size / 2; j++) ids.add(newBase + i * size + j);
    out.push([...ids]);
  }
  return out;
}

function pct(lat, q) {
  const s = [...lat].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

const now = () => Number(process.hrtime.bigint()) / 1e6;

async function memwalDb(uri, opts) {
  const m = require("../dist/lib/index.js");
  return { m, db: await m.connect(uri, opts) };
}

/** memwal takes the Arrow IPC stream bytes (a Uint8Array, not copied); the peer an apache-arrow Table. */
function input(t) {
  return engine.startsWith("memwal") ? tableToIPC(t, "stream") : t;
}

async function openEngine(initial, make = rows) {
  if (engine === "memwal") {
    const { db } = await memwalDb(path.join(dir, "db"));
    return { tbl: await db.createTable("t", input(make(range(0, initial)))) };
  }
  const lancedb = require("@lancedb/lancedb");
  const db = await lancedb.connect(path.join(dir, "db"));
  const base = make(range(0, initial));
  return { tbl: await db.createTable("t", base) };
}

async function upsert(tbl, data, memWal) {
  let b = tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll();
  if (memWal) b = b.memWal();
  return b.execute(data);
}

async function sequential(tbl, count, size, existing, memWal = false, make = rows) {
  const data = batches(count, size, existing, 10_000_000).map((ids) => input(make(ids)));
  // Warm-up (not timed, adds no row): the first call builds the key index / opens the table.
  await upsert(tbl, input(make([0])), memWal);
  const lat = [];
  let inserted = 0,
    updated = 0;
  const t0 = now();
  for (const d of data) {
    const s = now();
    const r = await upsert(tbl, d, memWal);
    lat.push(now() - s);
    inserted += r.numInsertedRows ?? 0;
    updated += r.numUpdatedRows ?? 0;
  }
  const secs = (now() - t0) / 1000;
  const rowsAfter = await tbl.countRows();
  return {
    calls: count,
    p50_ms: pct(lat, 0.5),
    p99_ms: pct(lat, 0.99),
    first10_ms: pct(lat.slice(0, 10), 0.5),
    last10_ms: pct(lat.slice(-10), 0.5),
    rows_per_s: (count * size) / secs,
    counts_exact: inserted === count * (size / 2) && updated === count * (size / 2),
    count_rows_sees_all: rowsAfter === existing + count * (size / 2),
    lat,
  };
}

/** n rows of 128-d float32: uniform random, or a seeded Gaussian mixture of 100 clusters. */
/** 100 random mixture centres. */
const mixture = () => Array.from({ length: 100 }, () => Float32Array.from({ length: DIM }, () => rnd()));

/** `n` rows: vectors around `centers` (new ones unless given) or uniform random. */
function vectorRows(n, clustered, from = 0, centers = mixture()) {
  const floats = new Float32Array(n * DIM);
  const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
  for (let i = 0; i < n; i++) {
    const c = centers[Math.floor(rnd() * 100)];
    for (let j = 0; j < DIM; j++) floats[i * DIM + j] = clustered ? c[j] + 0.05 * gauss() : rnd();
  }
  const fsl = new FixedSizeList(DIM, new Field("item", new Float32(), true));
  const vec = makeVector(
    makeData({ type: fsl, length: n, nullCount: 0, child: makeData({ type: new Float32(), length: n * DIM, data: floats }) }),
  );
  const t = new Table({
    id: makeVector(BigInt64Array.from({ length: n }, (_, i) => BigInt(from + i))),
    cat: makeVector(Int32Array.from({ length: n }, (_, i) => (from + i) % 10)),
    vec,
  });
  return { table: tableFromIPC(tableToIPC(t, "stream")), floats };
}

async function vectorTable(name, t) {
  if (engine === "memwal") {
    const { db } = await memwalDb(path.join(dir, "db"));
    return db.createTable(name, input(t));
  }
  const lancedb = require("@lancedb/lancedb");
  const db = await lancedb.connect(path.join(dir, "db"));
  return db.createTable(name, t);
}

/** E: flat top-10 L2, one query at a time, no index on either side. */
async function flatSearch(n) {
  const out = {};
  const queries = engine === "memwal" ? 200 : n >= 1_000_000 ? 15 : 60;
  for (const clustered of [false, true]) {
    const { table } = vectorRows(n, clustered);
    const tbl = await vectorTable(clustered ? "clustered" : "random", table);
    const qs = Array.from({ length: queries }, () => Float32Array.from({ length: DIM }, () => rnd()));
    for (const filter of [null, "cat = 3"]) {
      const run = (q) => {
        let b = tbl.search(Array.from(q)).limit(10);
        if (filter) b = b.where(filter);
        return b.toArray();
      };
      await run(qs[0]);
      await run(qs[1]);
      const lat = [];
      let found = 0;
      for (const q of qs) {
        const s = now();
        found += (await run(q)).length;
        lat.push(now() - s);
      }
      const key = `${clustered ? "clustered" : "random"}${filter ? "_filter10" : ""}`;
      const p50 = pct(lat, 0.5);
      out[key] = {
        p50_ms: p50,
        p99_ms: pct(lat, 0.99),
        qps: 1000 / (lat.reduce((a, b) => a + b, 0) / lat.length),
        scan_gb_s: (n * DIM * 4) / (p50 / 1000) / 1e9,
        rows_per_query: found / queries,
        lat,
      };
    }
  }
  return { rows: n, queries, ...out };
}

/** S: 1M rows (id int64, cat int32 with 1000 values, name utf8); filtered reads before and after a
 * BTREE on `id`: a point, five ids, a 100-row range, and countRows of a point. */
async function scalarIndex() {
  const n = 1_000_000;
  const ids = BigInt64Array.from({ length: n }, (_, i) => BigInt(i));
  const t = tableFromIPC(
    tableToIPC(
      new Table({
        id: makeVector(ids),
        cat: makeVector(Int32Array.from({ length: n }, (_, i) => (i * 7919) % 1000)),
        name: vectorFromArray(
          Array.from({ length: n }, (_, i) => `n${i}`),
          new Utf8(),
        ),
      }),
      "stream",
    ),
  );
  const tbl = await vectorTable("s", t);
  const queries = engine === "memwal" ? 300 : 100;
  const picks = Array.from({ length: queries }, () => Math.floor(rnd() * (n - 200)));
  const shapes = {
    point: (x) => tbl.query().where(`id = ${x}`).toArray(),
    in5: (x) =>
      tbl
        .query()
        .where(`id IN (${[0, 37, 91, 150, 199].map((d) => x + d).join(", ")})`)
        .toArray(),
    range100: (x) =>
      tbl
        .query()
        .where(`id >= ${x} AND id < ${x + 100}`)
        .toArray(),
    count_point: (x) => tbl.countRows(`id = ${x}`),
  };
  const want = { point: 1, in5: 5, range100: 100, count_point: 1 };
  const pass = async (label) => {
    const out = {};
    for (const [shape, run] of Object.entries(shapes)) {
      await run(picks[0]);
      const lat = [];
      let right = 0;
      for (const x of picks) {
        const s = now();
        const r = await run(x);
        lat.push(now() - s);
        if ((typeof r === "number" ? r : r.length) === want[shape]) right++;
      }
      out[`${label}_${shape}`] = {
        p50_ms: pct(lat, 0.5),
        p99_ms: pct(lat, 0.99),
        qps: 1000 / (lat.reduce((a, b) => a + b, 0) / lat.length),
        right: right / picks.length,
      };
    }
    return out;
  };
  const before = await pass("scan");
  const s = now();
  if (engine === "memwal") {
    const { m } = await memwalDb(path.join(dir, "db"));
    await tbl.createIndex("id", { config: m.Index.btree() });
  } else {
    await tbl.createIndex("id", { config: require("@lancedb/lancedb").Index.btree() });
  }
  const build_s = (now() - s) / 1000;
  const after = await pass("btree");
  return { rows: n, queries, build_s, rss_mb: process.memoryUsage().rss / 1e6, ...before, ...after };
}

/** Query settings G tries: [nprobes, refineFactor]. */
const G_SETTINGS = [
  [5, 0],
  [20, 0],
  [10, 5],
  [20, 10],
  [20, 20],
  [40, 20],
  [40, 50],
  [100, 50],
  [100, 200],
];

/** HNSW settings G tries: [nprobes, ef, refineFactor], 0 for the engine's default (G_HNSW_SETTINGS="10:64:5,0:0:0" replaces them). */
const G_HNSW_SETTINGS = process.env.G_HNSW_SETTINGS
  ? process.env.G_HNSW_SETTINGS.split(",").map((s) => s.split(":").map(Number))
  : [
      [0, 0, 0],
      [5, 32, 0],
      [10, 64, 0],
      [20, 64, 0],
      [40, 128, 0],
      [10, 64, 5],
      [20, 128, 5],
    ];

/** Recall@10, p50/p99 and q/s of `run` over the queries. */
async function measure(run, qs, truth) {
  await run(qs[0]);
  const lat = [];
  let hit = 0;
  for (let i = 0; i < qs.length; i++) {
    const s = now();
    const got = await run(qs[i]);
    lat.push(now() - s);
    for (const r of got) if (truth[i].has(Number(r.id))) hit++;
  }
  return {
    recall: hit / (10 * qs.length),
    p50_ms: pct(lat, 0.5),
    p99_ms: pct(lat, 0.99),
    qps: 1000 / (lat.reduce((a, b) => a + b, 0) / lat.length),
  };
}

/**
 * G: an IVF_PQ index over n 128-d float32 vectors (uniform random, and the clustered mixture), the same
 * parameters on both engines (sqrt(n) partitions, 16 sub-vectors, 8 bits): build time and peak RSS, then
 * for each query setting recall@10 against the exact answer over QN queries, p50/p99 and q/s. The exact
 * answers come from memwal's flat search (tested against brute-force oracles) for both engines.
 */
async function indexed(n) {
  const QN = Number(process.env.G_QUERIES ?? 1000);
  const P = Math.round(Math.sqrt(n));
  const M = 16;
  const m = require("../dist/lib/index.js");
  const truthDb = await m.connect("memory://");
  const out = { rows: n, partitions: P, sub_vectors: M, queries: QN };
  // G_DATA=clustered (or random) runs one data set; G_PQ=0 skips the IVF_PQ part.
  const sets = { random: [false], clustered: [true] }[process.env.G_DATA] ?? [false, true];
  for (const clustered of sets) {
    const name = clustered ? "clustered" : "random";
    const { table, floats } = vectorRows(n, clustered);
    const tbl = await vectorTable(name, table);
    const truthTbl = await truthDb.createTable(name, tableToIPC(table, "stream"));
    const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
    const qs = Array.from({ length: QN }, () => {
      if (!clustered) return Array.from({ length: DIM }, () => rnd());
      const r = Math.floor(rnd() * n);
      return Array.from(floats.subarray(r * DIM, (r + 1) * DIM), (x) => x + 0.05 * gauss());
    });
    const truth = [];
    for (const q of qs) truth.push(new Set((await truthTbl.search(q).bypassVectorIndex().limit(10).toArray()).map((r) => Number(r.id))));
    const Index = engine === "memwal" ? m.Index : require("@lancedb/lancedb").Index;
    const t0 = now();
    const pq = process.env.G_PQ !== "0";
    if (pq) await tbl.createIndex("vec", { config: Index.ivfPq({ numPartitions: P, numSubVectors: M, numBits: 8 }) });
    const build_s = (now() - t0) / 1000;
    const rss_after_build_mb = process.resourceUsage().maxRSS / 1024;
    const settings = [];
    for (const [nprobes, refine] of pq ? G_SETTINGS : []) {
      const run = (q) => {
        let b = tbl.search(q).limit(10).nprobes(nprobes);
        if (refine) b = b.refineFactor(refine);
        return b.toArray();
      };
      settings.push({ nprobes, refine, ...(await measure(run, qs, truth)) });
    }
    const best = (list, floor) => list.filter((x) => x.recall >= floor).sort((a, b) => b.qps - a.qps)[0] ?? null;
    // HNSW over scalar-quantised vectors, the same partitions, m 20, efConstruction 150 on both engines.
    const h0 = now();
    await tbl.createIndex("vec", { config: Index.hnswSq({ numPartitions: P, m: 20, efConstruction: 150 }), replace: true });
    const hnsw_build_s = (now() - h0) / 1000;
    const hnsw_rss_mb = process.resourceUsage().maxRSS / 1024;
    const hnsw = [];
    for (const [nprobes, ef, refine] of G_HNSW_SETTINGS) {
      const run = (q) => {
        // 0 leaves the engine's default (the "peer's default search setting").
        let b = tbl.search(q).limit(10);
        if (nprobes) b = b.nprobes(nprobes);
        if (ef) b = b.ef(ef);
        if (refine) b = b.refineFactor(refine);
        return b.toArray();
      };
      hnsw.push({ nprobes, ef, refine, ...(await measure(run, qs, truth)) });
    }
    out[name] = {
      build_s,
      rss_after_build_mb,
      at90: best(settings, 0.9),
      at95: best(settings, 0.95),
      settings,
      hnsw_build_s,
      hnsw_rss_mb,
      hnsw_at90: best(hnsw, 0.9),
      hnsw_at95: best(hnsw, 0.95),
      hnsw,
    };
  }
  return out;
}

/**
 * R: IVF_RQ (RaBitQ) against the peer's, and IVF_PQ for reference, on data where PQ codes order rows poorly:
 * 100k x 64-d rows from 256 Gaussian clusters (centres sd 3 per element, rows sd 1 around them), queries fresh
 * draws from the same mixture. Each index at sqrt(n) partitions (IVF_PQ: 16 sub-vectors, 8 bits; IVF_RQ: numBits
 * 1, 2 and 4, or R_BITS="1,2"; R_ROWS, R_DIM, R_QUERIES change the data): build time, then recall@10 against the exact answer, p50/p99 and q/s per setting
 * [nprobes, refineFactor] (0: none).
 */
async function rabitq() {
  const n = Number(process.env.R_ROWS ?? 100_000);
  const D = Number(process.env.R_DIM ?? 64);
  const QN = Number(process.env.R_QUERIES ?? 500);
  const P = Math.round(Math.sqrt(n));
  const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
  const centres = Array.from({ length: 256 }, () => Float32Array.from({ length: D }, () => 3 * gauss()));
  const draw = (k) => {
    const out = new Float32Array(k * D);
    for (let i = 0; i < k; i++) {
      const c = centres[Math.floor(rnd() * 256)];
      for (let j = 0; j < D; j++) out[i * D + j] = c[j] + gauss();
    }
    return out;
  };
  const floats = draw(n);
  const fsl = new FixedSizeList(D, new Field("item", new Float32(), true));
  const vec = makeVector(
    makeData({ type: fsl, length: n, nullCount: 0, child: makeData({ type: new Float32(), length: n * D, data: floats }) }),
  );
  const table = tableFromIPC(
    tableToIPC(new Table({ id: makeVector(BigInt64Array.from({ length: n }, (_, i) => BigInt(i))), vec }), "stream"),
  );
  const qf = draw(QN);
  const qs = Array.from({ length: QN }, (_, i) => Array.from(qf.subarray(i * D, (i + 1) * D)));
  const m = require("../dist/lib/index.js");
  const truthTbl = await (await m.connect("memory://")).createTable("truth", tableToIPC(table, "stream"));
  const truth = [];
  for (const q of qs) truth.push(new Set((await truthTbl.search(q).bypassVectorIndex().limit(10).toArray()).map((r) => Number(r.id))));
  const tbl = await vectorTable("rq", table);
  const Index = engine === "memwal" ? m.Index : require("@lancedb/lancedb").Index;
  const bits = (process.env.R_BITS ?? "1,2,4").split(",").map(Number);
  const configs = [["IVF_PQ", () => Index.ivfPq({ numPartitions: P, numSubVectors: 16, numBits: 8 })]];
  for (const b of bits) configs.push([`IVF_RQ ${b} bit`, () => Index.ivfRq({ numPartitions: P, numBits: b })]);
  const out = { rows: n, dim: D, partitions: P, queries: QN };
  for (const [name, config] of configs) {
    const t0 = now();
    try {
      await tbl.createIndex("vec", { config: config(), replace: true });
    } catch (e) {
      out[name] = { error: String(e.message ?? e).slice(0, 200) };
      continue;
    }
    const build_s = (now() - t0) / 1000;
    const settings = [];
    for (const [nprobes, refine] of [
      [20, 0],
      [20, 5],
      [40, 5],
      [20, 10],
    ]) {
      const run = (q) => {
        let b = tbl.search(q).limit(10).nprobes(nprobes);
        if (refine) b = b.refineFactor(refine);
        return b.toArray();
      };
      settings.push({ nprobes, refine, ...(await measure(run, qs, truth)) });
    }
    out[name] = { build_s, settings };
  }
  return out;
}

/**
 * H: a 100k-row table with an IVF_PQ index taking 200-row upserts (100 new rows, 100 rows with new vectors)
 * while queries run: after each acknowledged upsert, 4 queries (the vector of a new row, of an updated row, and
 * two near the data) ranked through the index (nprobes 20, refineFactor 10), each compared with the exact answer
 * over everything acknowledged so far (the same table searched with bypassVectorIndex). memwal: a served table
 * written on the memWal path; the peer: a local table, standard merge (and its fastSearch, which skips
 * unindexed rows).
 */
async function streaming() {
  const n = 100_000;
  const P = Math.round(Math.sqrt(n));
  const centers = mixture();
  const { table, floats } = vectorRows(n, true, 0, centers);
  // New and updated rows come from the base's mixture (H_SHIFT=1: from 100 new centres each round, i.e.
  // data the trained index has never seen).
  const writeCenters = () => (process.env.H_SHIFT === "1" ? mixture() : centers);
  let tbl, server, write, Index;
  if (engine === "memwal") {
    const m = require("../dist/lib/index.js");
    Index = m.Index;
    server = await m.serve({ dataDir: path.join(dir, "server"), apiKey: "k" });
    const db = await m.connect("db://bench", { apiKey: "k", hostOverride: server.url });
    tbl = await db.createTable("t", input(table));
    write = (d) => tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().memWal().execute(input(d));
  } else {
    const lancedb = require("@lancedb/lancedb");
    Index = lancedb.Index;
    const db = await lancedb.connect(path.join(dir, "db"));
    tbl = await db.createTable("t", table);
    write = (d) => tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(d);
  }
  await tbl.createIndex("vec", { config: Index.ivfPq({ numPartitions: P, numSubVectors: 16, numBits: 8 }) });
  const rounds = Number(process.env.H_ROUNDS ?? 50);
  const recall = { all: [], fresh_top1: 0, updated_top1: 0, fast_all: [], fast_fresh_top1: 0, kinds: [[], [], [], []] };
  const asked = [];
  const lat = [];
  const ids = (rs) => rs.map((r) => Number(r.id));
  for (let r = 0; r < rounds; r++) {
    const newIds = range(2_000_000 + r * 100, 2_000_000 + (r + 1) * 100);
    const picked = new Set();
    while (picked.size < 100) picked.add(Math.floor(rnd() * n));
    const oldIds = [...picked];
    const { table: fresh, floats: ff } = vectorRows(100, true, 2_000_000 + r * 100, writeCenters());
    const { floats: uf } = vectorRows(100, true, 0, writeCenters());
    // Same columns as the base (id, cat, vec): rebuild the updated rows with their new vectors.
    const fsl = new FixedSizeList(DIM, new Field("item", new Float32(), true));
    const updTable = new Table({
      id: makeVector(BigInt64Array.from(oldIds, (x) => BigInt(x))),
      cat: makeVector(Int32Array.from(oldIds, (x) => x % 10)),
      vec: makeVector(
        makeData({ type: fsl, length: 100, nullCount: 0, child: makeData({ type: new Float32(), length: 100 * DIM, data: uf }) }),
      ),
    });
    const batch = tableFromIPC(
      tableToIPC(new Table([...fresh.batches, ...tableFromIPC(tableToIPC(updTable, "stream")).batches]), "stream"),
    );
    await write(batch);
    const near = Math.floor(rnd() * n);
    const qs = [
      [Array.from(ff.subarray(0, DIM)), newIds[0]],
      [Array.from(uf.subarray(0, DIM)), oldIds[0]],
      [Array.from(floats.subarray(DIM * near, DIM * near + DIM), (x) => x + 0.01), -1],
      [Array.from({ length: DIM }, () => rnd()), -1],
    ];
    for (const [kind, [q, want]] of qs.entries()) {
      const s = now();
      const got = await tbl.search(q).nprobes(20).refineFactor(10).limit(10).toArray();
      lat.push(now() - s);
      const exact = new Set(ids(await tbl.search(q).bypassVectorIndex().limit(10).toArray()));
      recall.all.push(ids(got).filter((i) => exact.has(i)).length / 10);
      recall.kinds[kind].push(recall.all[recall.all.length - 1]);
      asked.push([kind, q]);
      if (want >= 2_000_000 && ids(got)[0] === want) recall.fresh_top1++;
      if (want >= 0 && want < n && ids(got)[0] === want) recall.updated_top1++;
      if (engine !== "memwal") {
        const fast = await tbl.search(q).nprobes(20).refineFactor(10).fastSearch().limit(10).toArray();
        recall.fast_all.push(ids(fast).filter((i) => exact.has(i)).length / 10);
        if (want >= 2_000_000 && ids(fast)[0] === want) recall.fast_fresh_top1++;
      }
    }
  }
  const mean = (a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : null);
  // Streamed vs static: every query asked, against the final data, through the index as the stream left it
  // and then through an index trained afresh on all the rows (replace), by query kind
  // (new row, updated row, near a base row, uniform random).
  const byKind = async () => {
    const out = [[], [], [], []];
    for (const [kind, q] of asked) {
      const got = ids(await tbl.search(q).nprobes(20).refineFactor(10).limit(10).toArray());
      const exact = new Set(ids(await tbl.search(q).bypassVectorIndex().limit(10).toArray()));
      out[kind].push(got.filter((i) => exact.has(i)).length / 10);
    }
    return { all: mean(out.flat()), kinds: out.map(mean) };
  };
  const streamedEnd = await byKind();
  await tbl.createIndex("vec", { config: Index.ivfPq({ numPartitions: P, numSubVectors: 16, numBits: 8 }), replace: true });
  const staticEnd = await byKind();
  if (server) await server.close();
  return {
    recall_by_kind: recall.kinds.map(mean),
    end_streamed_recall_at10: streamedEnd.all,
    end_streamed_by_kind: streamedEnd.kinds,
    end_static_recall_at10: staticEnd.all,
    end_static_by_kind: staticEnd.kinds,
    rounds,
    recall_at10: mean(recall.all),
    fresh_row_top1: recall.fresh_top1 / rounds,
    updated_row_top1: recall.updated_top1 / rounds,
    fast_search_recall_at10: mean(recall.fast_all),
    fast_search_fresh_row_top1: engine === "memwal" ? null : recall.fast_fresh_top1 / rounds,
    p50_ms: pct(lat, 0.5),
    p99_ms: pct(lat, 0.99),
  };
}

/** `t` with a `text` column: 8 words of a 1,000-word vocabulary per row (ids from `from`, seeded by them). */
function withText(t, from) {
  const texts = Array.from({ length: t.numRows }, (_, i) => {
    let x = (from + i) * 2654435761;
    return Array.from({ length: 8 }, () => {
      x = (x * 1103515245 + 12345) % 2147483648;
      return `w${x % 1000}`;
    }).join(" ");
  });
  const cols = Object.fromEntries(t.schema.fields.map((f) => [f.name, t.getChild(f.name)]));
  return tableFromIPC(tableToIPC(new Table({ ...cols, text: vectorFromArray(texts, new Utf8()) }), "stream"));
}

/**
 * V: the same IVF_PQ top-10 search (nprobes 20, refine 10) on a local table and on a served one (our server in
 * process on 127.0.0.1, our remote client), at V_ROWS rows (100k): served with nothing buffered, then with
 * 1,000 rows buffered in the memtables (a memWal upsert of 500 updated and 500 new rows, not flushed), a
 * filtered scan (`cat = 3`, limit 10) and a full-text search (one term of a 1,000-word vocabulary, FTS index,
 * top 10) on both; the round trip of a request that does nothing (countRows with no filter, O(1)). The issue's
 * target: served within 1.3x of local plus one round trip. The peer: its local table.
 */
async function servedVsLocal() {
  const n = Number(process.env.V_ROWS ?? 100_000);
  const QN = 300;
  const P = Math.round(Math.sqrt(n));
  const { table: plain, floats } = vectorRows(n, true);
  const table = withText(plain, 0);
  const terms = Array.from({ length: QN }, () => `w${Math.floor(rnd() * 1000)}`);
  let ti = 0;
  const fts = (t) => () =>
    t
      .search(terms[ti++ % QN], "fts")
      .limit(10)
      .toArray();
  const gauss = () => Math.sqrt(-2 * Math.log(rnd() + 1e-12)) * Math.cos(2 * Math.PI * rnd());
  const qs = Array.from({ length: QN }, () => {
    const r = Math.floor(rnd() * n);
    return Array.from(floats.subarray(r * DIM, (r + 1) * DIM), (x) => x + 0.05 * gauss());
  });
  const time = async (f) => {
    for (let i = 0; i < 5; i++) await f(qs[i]);
    const lat = [];
    for (const q of qs) {
      const s = now();
      await f(q);
      lat.push(now() - s);
    }
    return { p50_ms: pct(lat, 0.5), p99_ms: pct(lat, 0.99) };
  };
  const search = (t) => (q) => t.search(q).limit(10).nprobes(20).refineFactor(10).toArray();
  const scan = (t) => () => t.query().where("cat = 3").limit(10).toArray();
  const pq = (Index) => ({ config: Index.ivfPq({ numPartitions: P, numSubVectors: 16, numBits: 8 }) });
  if (engine !== "memwal") {
    const lancedb = require("@lancedb/lancedb");
    const t = await (await lancedb.connect(path.join(dir, "db"))).createTable("t", table);
    await t.createIndex("vec", pq(lancedb.Index));
    await t.createIndex("text", { config: lancedb.Index.fts() });
    return { rows: n, local: await time(search(t)), local_scan: await time(scan(t)), local_fts: await time(fts(t)) };
  }
  const m = require("../dist/lib/index.js");
  const local = await (await m.connect(path.join(dir, "local"))).createTable("t", input(table));
  await local.createIndex("vec", pq(m.Index));
  await local.createIndex("text", { config: m.Index.fts() });
  const out = { rows: n, local: await time(search(local)), local_scan: await time(scan(local)), local_fts: await time(fts(local)) };
  // The server as its own process (as deployed), then in this process (serve(), sharing the 2 cores with JS).
  const noFlush = { flushRows: 1e9, flushIntervalMs: 3_600_000 };
  for (const [where, start] of [
    ["proc", () => spawnServer(path.join(dir, "proc"), ["--flush-rows", "1000000000", "--flush-interval-ms", "3600000"])],
    ["inproc", () => m.serve({ dataDir: path.join(dir, "inproc"), apiKey: "k", ...noFlush })],
  ]) {
    const server = await start();
    try {
      const db = await m.connect("db://bench", { apiKey: "k", hostOverride: server.url });
      // In bodies under the server's 256 MiB limit (1M rows are 512 MB).
      const chunk = 200_000;
      const served = await db.createTable("t", input(table.slice(0, chunk)));
      for (let at = chunk; at < n; at += chunk) await served.add(input(table.slice(at, at + chunk)));
      await served.createIndex("vec", pq(m.Index));
      await served.createIndex("text", { config: m.Index.fts() });
      const r = {
        rtt: await time(() => served.countRows()),
        served: await time(search(served)),
        served_scan: await time(scan(served)),
        served_fts: await time(fts(served)),
      };
      const fresh = withText(vectorRows(500, true, 10_000_000).table, 10_000_000);
      const upd = withText(vectorRows(500, true, n - 500).table, n - 500);
      const batch = tableFromIPC(tableToIPC(new Table([...fresh.batches, ...upd.batches]), "stream"));
      await served.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().memWal().execute(input(batch));
      r.served_buffered = await time(search(served));
      r.served_buffered_scan = await time(scan(served));
      r.served_buffered_fts = await time(fts(served));
      const stats = await served.getLsmStats();
      r.buffered_rows = stats?.buckets?.[0]?.memtables?.reduce((a, x) => a + x.rows, 0) ?? null;
      r.target_ms = 1.3 * out.local.p50_ms + r.rtt.p50_ms;
      r.target_scan_ms = 1.3 * out.local_scan.p50_ms + r.rtt.p50_ms;
      r.target_fts_ms = 1.3 * out.local_fts.p50_ms + r.rtt.p50_ms;
      out[where] = r;
    } finally {
      await server.close();
    }
  }
  return out;
}

/** The machine's memory bandwidth: memcpy of 512 MiB (bytes read + written per second), best of 5. */
function bandwidth() {
  const size = 512 * 2 ** 20;
  const a = Buffer.alloc(size, 1);
  const b = Buffer.alloc(size);
  let best = Infinity;
  for (let i = 0; i < 5; i++) {
    const s = now();
    a.copy(b);
    best = Math.min(best, now() - s);
  }
  return { memcpy_gb_s: (2 * size) / (best / 1000) / 1e9, memcpy_read_gb_s: size / (best / 1000) / 1e9 };
}

/**
 * F: after an upsert of 200 new vectors is acknowledged, how long until a
 * vector search returns them: memwal (served table, memWal path) must find
 * them in the very next query; the peer on its standard path and its LSM path.
 */
async function freshness() {
  const { table } = vectorRows(100_000, false);
  let tbl, server, write;
  if (engine === "memwal") {
    const m = require("../dist/lib/index.js");
    server = await m.serve({ dataDir: path.join(dir, "server"), apiKey: "k" });
    const db = await m.connect("db://bench", { apiKey: "k", hostOverride: server.url });
    tbl = await db.createTable("t", input(table));
    write = (d) => tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().memWal().execute(input(d));
  } else {
    const lancedb = require("@lancedb/lancedb");
    const db = await lancedb.connect(path.join(dir, "db"));
    tbl = await db.createTable("t", table);
    if (workload === "F" && engine === "lancedb-lsm") {
      await tbl.setUnenforcedPrimaryKey("id");
      await tbl.setLsmWriteSpec({ specType: "unsharded" });
      write = (d) => tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().useLsm(true).execute(d);
    } else {
      write = (d) => tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(d);
    }
  }
  const rounds = 20;
  const lag = [];
  let nextQueryFound = 0,
    never = 0;
  for (let r = 0; r < rounds; r++) {
    const { table: fresh, floats } = vectorRows(200, false, 1_000_000 + r * 200);
    await write(fresh);
    const acked = now();
    const probe = Array.from(floats.subarray(0, DIM));
    let polls = 0;
    for (;;) {
      polls++;
      const hit = await tbl.search(probe).limit(1).toArray();
      if (hit.length && Number(hit[0].id) === 1_000_000 + r * 200) break;
      if (now() - acked > 10_000) {
        never++;
        break;
      }
      await new Promise((res) => setTimeout(res, 5));
    }
    if (polls === 1) nextQueryFound++;
    lag.push(now() - acked);
  }
  if (server) await server.close();
  return { rounds, next_query_found: nextQueryFound, never_found_in_10s: never, p50_ms: pct(lag, 0.5), p99_ms: pct(lag, 0.99), lat: lag };
}

/** 8 concurrent clients, 100 MemWAL upserts each, distinct new keys per client. */
async function concurrent(tbl) {
  const clients = 8,
    per = 100,
    size = 200;
  const work = range(0, clients).map((c) => batches(per, size, 100_000, 10_000_000 + c * per * size).map((ids) => input(rows(ids))));
  await upsert(tbl, input(rows([0])), true); // warm-up, not timed, adds no row
  const lat = [];
  let inserted = 0,
    updated = 0;
  const t0 = now();
  await Promise.all(
    work.map(async (list) => {
      for (const d of list) {
        const s = now();
        const r = await upsert(tbl, d, true);
        lat.push(now() - s);
        inserted += r.numInsertedRows;
        updated += r.numUpdatedRows;
      }
    }),
  );
  const secs = (now() - t0) / 1000;
  const seen = await tbl.countRows();
  return {
    clients,
    calls: clients * per,
    p50_ms: pct(lat, 0.5),
    p99_ms: pct(lat, 0.99),
    upserts_per_s: (clients * per) / secs,
    rows_per_s: (clients * per * size) / secs,
    // Each batch: size/2 ids that exist (updates), size/2 new ids distinct across clients (inserts).
    counts_exact: inserted === clients * per * (size / 2) && updated === clients * per * (size / 2),
    count_rows_sees_all: seen === 100_000 + clients * per * (size / 2),
  };
}

/** Starts the memwal-server binary (path in MEMWAL_SERVER_BIN, set by bench.mjs) on a free port. */
async function spawnServer(dataDir, extra = []) {
  const bin = process.env.MEMWAL_SERVER_BIN;
  if (!bin || !fs.existsSync(bin)) throw new Error(`memwal-server binary not found (${bin}); run bench.mjs, which builds it`);
  const { spawn } = await import("node:child_process");
  const child = spawn(bin, ["--data", dataDir, "--api-key", "k", "--port", "0", ...extra], {
    stdio: ["ignore", "pipe", "inherit"],
    env: { ...process.env, MEMWAL_LOG: "warn" },
  });
  const url = await new Promise((resolve, reject) => {
    let out = "";
    child.stdout.on("data", (c) => {
      out += c;
      const m = /listening on (\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    child.on("exit", (code) => reject(new Error(`memwal-server exited with ${code}`)));
  });
  return {
    url,
    close: async () => {
      child.kill("SIGINT");
    },
  };
}

/** The moto S3 bucket bench.mjs started (MEMWAL_TEST_S3_ENDPOINT), with LanceDB's option keys (both engines read them). */
function s3Options() {
  const endpoint = process.env.MEMWAL_TEST_S3_ENDPOINT;
  if (!endpoint) throw new Error("K needs MEMWAL_TEST_S3_ENDPOINT (bench.mjs starts moto_server)");
  return {
    aws_endpoint: endpoint,
    allow_http: "true",
    aws_access_key_id: "testing",
    aws_secret_access_key: "testing",
    aws_region: "us-east-1",
  };
}

/** K: a 20k-row table on local disk or on S3 (moto): 100 native 200-row upserts, then flat top-10 searches from a
 * fresh connection (the first one cold: nothing cached in the process), the peer on the same bucket. */
async function objectStore(onS3) {
  const uri = onS3 ? `s3://memwal-test/bench-${engine}-${process.pid}-${Date.now()}` : path.join(dir, "db");
  const opts = onS3 ? { storageOptions: s3Options() } : {};
  const open = async () => (engine === "memwal" ? (await memwalDb(uri, opts)).db : await require("@lancedb/lancedb").connect(uri, opts));
  const tbl = await (await open()).createTable("t", input(rows(range(0, 20_000))));
  const up = await sequential(tbl, 100, 200, 20_000);
  const t2 = await (await open()).openTable("t");
  const qs = Array.from({ length: 41 }, () => Array.from({ length: DIM }, () => rnd()));
  const s0 = now();
  const first = await t2.search(qs[0]).limit(10).toArray();
  const cold = now() - s0;
  const lat = [];
  for (const q of qs.slice(1)) {
    const s = now();
    await t2.search(q).limit(10).toArray();
    lat.push(now() - s);
  }
  return {
    upsert_p50_ms: up.p50_ms,
    upsert_p99_ms: up.p99_ms,
    rows_per_s: up.rows_per_s,
    counts_exact: up.counts_exact && up.count_rows_sees_all && first.length === 10,
    search_cold_ms: cold,
    search_p50_ms: pct(lat, 0.5),
    search_p99_ms: pct(lat, 0.99),
  };
}

/** KD: MemWAL upserts (1 client, 300 x 200 rows) through a server whose tables are on local disk ("local"),
 * on S3 with the WAL on local disk ("s3"), or on S3 with the WAL on S3 too ("s3wal": each group commit is one
 * create-only put, acknowledged when it returns). */
async function servedObjectStore(place) {
  const m = require("../dist/lib/index.js");
  const prefix = `s3://memwal-test/bench-kd-${process.pid}-${Date.now()}`;
  const s3 = { data: `${prefix}/data`, storageOptions: s3Options() };
  const where = place === "local" ? {} : place === "s3" ? s3 : { ...s3, wal: `${prefix}/wal` };
  const server = await m.serve({ dataDir: path.join(dir, "server"), apiKey: "k", ...where });
  const db = await m.connect("db://bench", { apiKey: "k", hostOverride: server.url });
  const tbl = await db.createTable("t", input(rows(range(0, 20_000))));
  const r = await sequential(tbl, 300, 200, 20_000, true);
  await server.close();
  return { p50_ms: r.p50_ms, p99_ms: r.p99_ms, counts_exact: r.counts_exact && r.count_rows_sees_all };
}

async function main() {
  let result = {};
  if (workload === "fsync") {
    // Appending 4 KiB + fdatasync (the file grows: the size change is journaled too),
    // and the same over preallocated, zero-filled space (data only: what the WAL does).
    const buf = Buffer.alloc(4096, 1);
    const measure = (prealloc) => {
      const fd = fs.openSync(path.join(dir, prealloc ? "pre" : "app"), "w");
      if (prealloc) {
        fs.writeSync(fd, Buffer.alloc(64 << 20));
        fs.fsyncSync(fd);
      }
      let n = 0,
        pos = 0;
      const t0 = now();
      while (now() - t0 < 2000 && pos + buf.length <= 64 << 20) {
        fs.writeSync(fd, buf, 0, buf.length, pos);
        fs.fdatasyncSync(fd);
        pos += buf.length;
        n++;
      }
      fs.closeSync(fd);
      return (now() - t0) / n;
    };
    const append = measure(false);
    const inPlace = measure(true);
    result = { fdatasync_per_s: 1000 / append, fdatasync_ms: append, fdatasync_inplace_ms: inPlace };
  } else if (workload === "A") {
    const { tbl } = await openEngine(100_000);
    const d = input(rows(range(50_000, 150_000)));
    const s = now();
    const r = await upsert(tbl, d, false);
    const ms = now() - s;
    result = {
      ms,
      rows_per_s: 100_000 / (ms / 1000),
      counts_exact: r.numInsertedRows === 50_000 && r.numUpdatedRows === 50_000,
      count_rows: await tbl.countRows(),
    };
  } else if (workload === "E100k" || workload === "E1m") {
    result = await flatSearch(workload === "E100k" ? 100_000 : 1_000_000);
  } else if (workload === "G100k" || workload === "G1m") {
    result = await indexed(workload === "G100k" ? 100_000 : 1_000_000);
  } else if (workload === "R") {
    result = await rabitq();
  } else if (workload === "S") {
    result = await scalarIndex();
  } else if (workload === "H") {
    result = await streaming();
  } else if (workload === "V") {
    result = await servedVsLocal();
  } else if (workload === "F") {
    result = await freshness();
  } else if (workload === "bw") {
    result = bandwidth();
  } else if (workload === "I100k" || workload === "I1m") {
    result = await fullText(engine, workload === "I100k" ? 100_000 : 1_000_000, dir);
  } else if (workload === "Klocal" || workload === "Ks3") {
    result = await objectStore(workload === "Ks3");
  } else if (workload === "KDlocal" || workload === "KDs3" || workload === "KDs3wal") {
    result = await servedObjectStore(workload.slice(2));
  } else if (workload === "B" || workload === "C") {
    const initial = workload === "B" ? 100_000 : 1_000_000;
    const { tbl } = await openEngine(initial);
    result = await sequential(tbl, workload === "B" ? 500 : 300, 200, initial);
  } else if (workload === "Bn") {
    const { tbl } = await openEngine(100_000, narrowRows);
    result = await sequential(tbl, 500, 200, 100_000, false, narrowRows);
  } else if (workload.startsWith("D")) {
    if (workload === "Dlsm") {
      const lancedb = require("@lancedb/lancedb");
      const db = await lancedb.connect(path.join(dir, "db"));
      const tbl = await db.createTable("t", rows(range(0, 100_000)));
      try {
        await tbl.setUnenforcedPrimaryKey("id");
        await tbl.setLsmWriteSpec({ specType: "unsharded" });
        const data = batches(500, 200, 100_000, 10_000_000).map((ids) => rows(ids));
        const lsm = (b) => (typeof b.useLsm === "function" ? b.useLsm(true) : b.useLsmWrite(true));
        await lsm(tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll()).execute(rows([0]));
        const lat = [];
        let counted = 0;
        for (const d of data) {
          const s = now();
          const r = await lsm(tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll()).execute(d);
          lat.push(now() - s);
          counted += (r.numInsertedRows ?? 0) + (r.numUpdatedRows ?? 0);
        }
        const seen = await tbl.countRows();
        result = {
          p50_ms: pct(lat, 0.5),
          p99_ms: pct(lat, 0.99),
          counts_exact: counted === 500 * 200,
          count_rows_sees_all: seen === 100_000 + 500 * 100,
          count_rows: seen,
        };
      } catch (e) {
        result = { error: String(e?.message ? e.message : e).slice(0, 300) };
      }
    } else {
      const m = require("../dist/lib/index.js");
      // D8proc: the same server as a separate process (the memwal-server binary), so that the clients
      // do not share its process; every other D workload runs it in process with serve().
      const server =
        workload === "D8proc"
          ? await spawnServer(path.join(dir, "server"))
          : await m.serve({
              dataDir: path.join(dir, "server"),
              apiKey: "k",
              ...(process.env.FLUSH_ROWS ? { flushRows: Number(process.env.FLUSH_ROWS) } : {}),
            });
      const db = await m.connect("db://bench", { apiKey: "k", hostOverride: server.url });
      const tbl = await db.createTable("t", input(rows(range(0, 100_000))));
      if (workload === "D1") result = await sequential(tbl, 500, 200, 100_000, true);
      else if (workload === "Ddirect") result = await sequential(tbl, 100, 200, 100_000, false);
      else result = await concurrent(tbl);
      await server.close();
    }
  }
  result.peak_rss_mb = process.resourceUsage().maxRSS / 1024;
  console.log(JSON.stringify({ engine, workload, ...result }));
  try {
    fs.rmSync(dir, { recursive: true, force: true });
  } catch {
    // the peer's background LSM writer may still be writing; the OS temp dir keeps it
  }
  process.exit(0);
}

main().catch((e) => {
  console.log(JSON.stringify({ engine, workload, error: String(e?.stack ? e.stack : e).slice(0, 500) }));
  process.exit(0);
});
