// Workload I (full-text search), run by worker.mjs in a process of its own per engine:
//   memwal (local table), memwal-server (our server in process, our remote client over 127.0.0.1),
//   lancedb (@lancedb/lancedb 0.39, local, FTS index), tantivy (PyPI tantivy, tantivy_bench.py in the
//   venv bench.mjs makes).
// The same seeded corpus for every engine: `n` documents of 30..70 words (~50) drawn from a Zipf
// vocabulary (s = 1.07) of 50k made-up words; the same queries: single term, 3-term OR, 3-term AND,
// and 3-word phrases cut from documents, top 10 each. Every index keeps positions (phrases need them);
// memwal and LanceDB use LanceDB's default analyzer (English stemming, stop words), tantivy its
// `en_stem` tokenizer. Timed: the index build, each query (sequential, one at a time), and (memwal-server
// against the peer) the freshness lag: from a write's start until a query returns the new row.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import { createRequire } from "node:module";
import * as path from "node:path";

const require = createRequire(import.meta.url);
const arrow = require("apache-arrow");

const VOCAB = 50_000;
const now = () => Number(process.hrtime.bigint()) / 1e6;

function pct(lat, q) {
  const s = [...lat].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
}

/** A seeded mulberry32 generator. */
function generator(seed) {
  let s = seed;
  return () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The made-up word of Zipf rank `r`: two to four consonant-vowel syllables (distinct per rank). */
function word(r) {
  const c = "bdfgklmnprstvz";
  const v = "aeiou";
  let x = r + 70; // at least two syllables
  let w = "";
  while (x > 0) {
    w += c[x % c.length] + v[Math.floor(x / c.length) % v.length];
    x = Math.floor(x / (c.length * v.length));
  }
  return w;
}

/** `{ docs, queries }`: the corpus (texts; document i has id i) and the query sets. */
export function corpus(n, seed = 26) {
  const rnd = generator(seed);
  const words = Array.from({ length: VOCAB }, (_, r) => word(r));
  const cdf = new Float64Array(VOCAB);
  let total = 0;
  for (let r = 0; r < VOCAB; r++) {
    total += 1 / (r + 1) ** 1.07;
    cdf[r] = total;
  }
  const draw = () => {
    const u = rnd() * total;
    let lo = 0;
    let hi = VOCAB - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid] < u) lo = mid + 1;
      else hi = mid;
    }
    return words[lo];
  };
  const docs = Array.from({ length: n }, () => Array.from({ length: 30 + Math.floor(rnd() * 41) }, draw).join(" "));
  const pick = (lo, hi) => words[lo + Math.floor(rnd() * (hi - lo))];
  const count = n >= 1_000_000 ? 200 : 400;
  const queries = {
    single: Array.from({ length: count }, () => pick(20, 5000)),
    or3: Array.from({ length: count }, () => [pick(20, 5000), pick(20, 5000), pick(20, 5000)].join(" ")),
    and3: Array.from({ length: count }, () => [pick(10, 300), pick(10, 300), pick(10, 300)].join(" ")),
    phrase: Array.from({ length: count }, () => {
      const d = docs[Math.floor(rnd() * n)].split(" ");
      const at = Math.floor(rnd() * (d.length - 3));
      return d.slice(at, at + 3).join(" ");
    }),
  };
  return { docs, queries };
}

/** An apache-arrow table of documents `from..from+texts.length` (id Int64, text Utf8). */
function docTable(texts, from = 0) {
  return arrow.tableFromArrays({
    id: BigInt64Array.from({ length: texts.length }, (_, i) => BigInt(from + i)),
    text: arrow.vectorFromArray(texts, new arrow.Utf8()),
  });
}

/** Runs every query set through `run(kind, text)`, sequentially; latencies per set. */
async function timeQueries(queries, run) {
  const out = {};
  for (const [kind, list] of Object.entries(queries)) {
    for (const q of list.slice(0, 10)) await run(kind, q); // warm-up
    const lat = [];
    let hits = 0;
    const t0 = now();
    for (const q of list) {
      const s = now();
      hits += (await run(kind, q)) > 0 ? 1 : 0;
      lat.push(now() - s);
    }
    const secs = (now() - t0) / 1000;
    out[kind] = { p50_ms: pct(lat, 0.5), p99_ms: pct(lat, 0.99), qps: list.length / secs, answered: hits / list.length };
  }
  return out;
}

/** memwal's or the peer's API: the same calls, each package's own classes. */
function ftsApi(pkg) {
  return async (tbl, kind, q) => {
    const query =
      kind === "phrase"
        ? new pkg.PhraseQuery(q, "text")
        : new pkg.MatchQuery(q, "text", { operator: kind === "and3" ? pkg.Operator.And : pkg.Operator.Or });
    const rows = await tbl.query().fullTextSearch(query).select(["id"]).limit(10).toArray();
    return rows.length;
  };
}

/** Writes one row with a fresh word, then queries until a query returns it; `rounds` times. */
async function freshness(tbl, pkg, write, n, rounds = 40) {
  const search = ftsApi(pkg);
  const lag = [];
  let next = 0;
  let never = 0;
  for (let i = 0; i < rounds; i++) {
    const token = `zzfresh${word(i)}`;
    const s = now();
    await write(docTable([`${token} ${word(3)} ${word(9)}`], n + i));
    let tries = 0;
    let found = false;
    while (!found && now() - s < 10_000) {
      tries += 1;
      found = (await search(tbl, "single", token)) > 0;
    }
    if (!found) never += 1;
    else {
      lag.push(now() - s);
      if (tries === 1) next += 1;
    }
  }
  return { rounds, next_query_found: next, never_found_in_10s: never, lag_p50_ms: pct(lag, 0.5), lag_p99_ms: pct(lag, 0.99) };
}

/** Loads the corpus into `tbl` in batches of 100k rows (not timed). */
async function load(db, docs, toInput) {
  const step = 100_000;
  const tbl = await db.createTable("docs", toInput(docTable(docs.slice(0, step))));
  for (let i = step; i < docs.length; i += step) await tbl.add(toInput(docTable(docs.slice(i, i + step), i)));
  return tbl;
}

/** Workload I for `engine` over `n` documents, in `dir`. */
export async function fullText(engine, n, dir) {
  const { docs, queries } = corpus(n);
  if (engine === "tantivy") return tantivy(docs, queries, dir);
  const memwal = engine.startsWith("memwal");
  const pkg = memwal ? require("../dist/lib/index.js") : require("@lancedb/lancedb");
  const toInput = (t) => (memwal ? arrow.tableToIPC(t, "stream") : t);
  let server;
  let db;
  if (engine === "memwal-server") {
    server = await pkg.serve({ dataDir: path.join(dir, "server"), apiKey: "k" });
    db = await pkg.connect("db://bench", { apiKey: "k", hostOverride: server.url });
  } else {
    db = await pkg.connect(path.join(dir, "db"));
  }
  const tbl = await load(db, docs, toInput);
  const t0 = now();
  await tbl.createIndex("text", { config: pkg.Index.fts({ withPosition: true }) });
  const buildS = (now() - t0) / 1000;
  const search = ftsApi(pkg);
  const result = { docs: n, build_s: buildS, build_docs_per_s: n / buildS, ...(await timeQueries(queries, (k, q) => search(tbl, k, q))) };
  if (engine === "memwal-server") {
    const write = (t) => tbl.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().memWal().execute(toInput(t));
    result.freshness = await freshness(tbl, pkg, write, n);
    await server.close();
  } else if (engine === "lancedb") {
    result.freshness = await freshness(tbl, pkg, (t) => tbl.add(t), n);
  }
  return result;
}

/** tantivy through tantivy_bench.py (in the venv bench.mjs made), on the same corpus and queries. */
function tantivy(docs, queries, dir) {
  const python = new URL(".venv-tantivy/bin/python", import.meta.url).pathname;
  const script = new URL("tantivy_bench.py", import.meta.url).pathname;
  const docsFile = path.join(dir, "docs.txt");
  fs.writeFileSync(docsFile, `${docs.join("\n")}\n`);
  const queryFile = path.join(dir, "queries.json");
  fs.writeFileSync(queryFile, JSON.stringify(queries));
  const out = execFileSync(python, [script, docsFile, queryFile, path.join(dir, "tantivy")], {
    encoding: "utf8",
    maxBuffer: 1 << 24,
  });
  return { docs: docs.length, ...JSON.parse(out.trim().split("\n").pop()) };
}
