/**
 * Compatibility: the official Python client (lancedb 0.40.0) against our
 * server on 127.0.0.1: it creates a table, searches vectors (every distance
 * type, prefilter, postfilter, row ids, several query vectors), merges and
 * finds the new row at once. Every answer must equal our own local search
 * of the same rows. scripts/test.sh installs the client in .venv-compat; a
 * missing client fails this suite, it never skips.
 */

import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { connect, type Server, serve } from "../lib";
import { expectSameRanking, expectSameSearch, ftsCorpus, s3TestOptions, s3TestUri, searchKey, tmpDir } from "./helpers";

const python = path.join(__dirname, "..", ".venv-compat", "bin", "python");
const script = path.join(__dirname, "..", "compat", "official_python.py");
const ftsScript = path.join(__dirname, "..", "compat", "official_python_fts.py");

function run(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(python, args);
    let out = "";
    let err = "";
    p.stdout.on("data", (d) => (out += d));
    p.stderr.on("data", (d) => (err += d));
    p.on("close", (code) => resolve({ code, out, err }));
  });
}

test("the official Python client is installed (scripts/test.sh installs it)", () => {
  expect(fs.existsSync(python)).toBe(true);
});

/**
 * The vector, index, query and admin script against the server at `url`; every answer equal to our own local
 * search of the same rows. `namespaces`: whether the server offers them (one whose tables are on an object
 * store refuses them, by name).
 */
async function vectorChecks(url: string, namespaces: boolean): Promise<void> {
  const data = Array.from({ length: 120 }, (_, i) => ({
    id: i,
    kind: ["a", "b", "c"][i % 3],
    vector: Array.from({ length: 6 }, (_, j) => Math.sin(i * 7 + j * 3)),
  }));
  const file = path.join(tmpDir(), "rows.json");
  fs.writeFileSync(file, JSON.stringify(data));
  const r = await run([script, url, file]);
  if (r.code !== 0) throw new Error(`python exited ${r.code}: ${r.err}`);
  const got = JSON.parse(r.out);
  expect(got.version).toBe("0.40.0");
  expect([got.count, got.count_after]).toEqual([120, 121]);

  const ours = await (await connect(tmpDir())).createTable("py", data);
  const key = searchKey;
  const same = expectSameSearch;
  const q = data[5].vector;
  for (const dt of ["l2", "cosine", "dot"] as const) {
    same(got[dt], key(await ours.search(q).distanceType(dt).limit(8).toArray()));
  }
  same(got.where, key(await ours.search(q).where("kind = 'b'").limit(5).toArray()));
  same(got.postfilter, key(await ours.search(q).where("kind = 'b'").postfilter().limit(9).toArray()));
  same(got.multi, key(await ours.vectorSearch([data[1].vector, data[2].vector]).limit(3).toArray()));
  expect(got.row_id_columns).toEqual(["id", "_distance", "_rowid"]);
  expect(got.fresh).toEqual([[500, 0, -1]]);
  expect(got.bad_dimension).toMatch(/dimension 3/);
  // Indexes: the answers through the index equal our exact search (every partition probed, refined).
  expect(got.indices).toEqual([["vector_idx", "IvfPq", ["vector"]]]);
  expect(got.index_stats).toEqual([121, 0, "IVF_PQ", "l2"]);
  same(got.index_search, key(await ours.search(q).limit(8).toArray()));
  expect(got.indices_after_replace).toEqual([["vf", "IvfFlat"]]);
  same(got.index_search_cosine, key(await ours.search(q).distanceType("cosine").limit(8).toArray()));
  expect(got.index_hnsw).toEqual([["vh", "IvfHnswSq"]]);
  same(got.index_search_hnsw, key(await ours.search(q).limit(8).toArray()));
  expect(got.index_rq).toEqual([
    ["vr", "IvfRq"],
    [121, "IVF_RQ"],
  ]);
  same(got.index_search_rq, key(await ours.search(q).limit(8).toArray()));
  expect(got.index_refused[0]).toMatch(/LABEL_LIST is not supported by memwal yet/);
  expect(got.index_refused.length).toBe(1);
  // BTREE: built through both calls, listed as the client spells it, and filters through it answer as ours do.
  expect(got.btree).toEqual([
    ["id_bt", "BTree"],
    ["kind_idx", "BTree"],
    ["vr", "IvfRq"],
  ]);
  expect(got.btree_stats).toEqual([121, "BTREE"]);
  const count = async (f: string) => ours.countRows(f);
  const idsWhere = async (f: string) =>
    (await ours.query().where(f).select(["id"]).toArray()).map((r) => Number(r.id)).sort((a, b) => a - b);
  expect(got.btree_filters).toEqual([
    await count("id < 10"),
    await count("kind = 'b'"),
    await idsWhere("id IN (3, 5, 119, 7000)"),
    await idsWhere("kind = 'a' AND id BETWEEN 10 AND 20"),
  ]);
  expect(got.bitmap).toEqual([["kind_bm", "Bitmap"]]);
  expect(got.bitmap_filters).toEqual([await count("kind = 'b'"), await count("kind IN ('a', 'c') AND id < 50")]);
  expect(got.indices_after_drop).toEqual([]);
  // stats(): 121 rows, no index left, some fragments; restore(first version): the 120 created rows, no row 500.
  expect(got.stats.slice(0, 2)).toEqual([121, 0]);
  expect(got.stats[2]).toBeGreaterThanOrEqual(1);
  expect(got.stats[3]).toBe(true);
  expect(got.restored).toEqual([120, 0]);
  // add_columns / alter_columns / drop_columns, then rename_table: the new column, its type, a filter on it.
  expect(got.evolved[0].at(-1)).toBe("plus");
  expect(got.evolved[0]).not.toContain("double");
  expect(got.evolved.slice(1)).toEqual(["int64", 1]);
  // select({ alias: sql }) with a struct filter, order_by, take_offsets / take_row_ids, explain_plan; tags; LSM.
  expect(got.queries).toEqual([[4, 6], [1, 3, 2], [1, 3], [2], true]);
  expect(got.tags).toEqual([1, ["first"]]);
  expect(got.lsm).toEqual([true, 4]);
  if (namespaces) {
    expect(got.namespaces).toEqual([["pyns"], { owner: "py" }, ["inner"], 2]);
    expect(got.namespaces_after_drop).toEqual([]);
  } else {
    expect(got.namespaces).toMatch(/refused: .*namespaces .*object store/i);
  }
  // list_tables(): the namespace listing route, paged.
  expect(got.list_tables).toEqual([["py", "py2"], ["py"], ["py2"], null]);
}

/** The full-text and hybrid script against the server at `url`: the served answers equal the client's embedded engine's. */
async function ftsChecks(url: string): Promise<void> {
  const rows = ftsCorpus(400, 26);
  const vector = rows[7].vector;
  const queries = {
    terms: "w6 w60 maple",
    and: "w1 w2",
    fuzzy: "harbr",
    phrase: "silver maple harbor",
    hybrid_phrase: "w0 w1",
    must: "maple",
    should: "w3",
    must_not: "w7",
    vector,
  };
  const file = path.join(tmpDir(), "fts.json");
  fs.writeFileSync(file, JSON.stringify({ rows, added: ftsCorpus(60, 27, 1000), queries }));
  const r = await run([ftsScript, url, file]);
  if (r.code !== 0) throw new Error(`python exited ${r.code}: ${r.err}`);
  const got = JSON.parse(r.out) as { version: string; cases: Record<string, { served: number[][]; embedded: number[][] }> };
  expect(got.version).toBe("0.40.0");
  const names = Object.keys(got.cases).sort();
  expect(names).toEqual(
    [
      "boolean",
      "fast_match",
      "fast_where",
      "hybrid",
      "hybrid_phrase",
      "hybrid_where",
      "match",
      "match_and",
      "match_fuzzy",
      "offset",
      "phrase",
      "phrase_of_hybrid",
      "phrase_slop",
      "postfilter",
      "quoted",
      "where",
    ].sort(),
  );
  for (const name of names) {
    const { served, embedded } = got.cases[name];
    expect([name, embedded.length > 0]).toEqual([name, true]);
    expectSameRanking(name, served, embedded);
  }
  // RRF fuses ranks: the hybrid cases' full-text halves have no tied scores (whose order LanceDB leaves to its
  // search's internals, and memwal breaks by row id), so the fused answers must agree row for row.
  for (const half of ["match", "phrase_of_hybrid"]) {
    const s = got.cases[half].embedded.map((x) => x[1]);
    expect([half, s.some((x, i) => i > 0 && Math.abs(x - s[i - 1]) <= 1e-6 * x)]).toEqual([half, false]);
  }
  // The postfilter keeps what passes of the top 10: fewer rows than the prefilter's 10.
  expect(got.cases.postfilter.embedded.length).toBeLessThan(got.cases.where.embedded.length);
}

describe("Python lancedb 0.40 against memwal-server", () => {
  let server: Server;
  beforeAll(async () => {
    server = await serve({ dataDir: tmpDir(), apiKey: "k" });
  });
  afterAll(async () => server.close());

  test("vector search answers as our own local search; list_tables pages", async () => {
    await vectorChecks(server.url, true);
  }, 60_000);

  test("full-text and hybrid search answer as the client's own embedded engine (match, phrase, boolean, filters, RRF, fast_search)", async () => {
    await ftsChecks(server.url);
  }, 120_000);
});

describe("Python lancedb 0.40 against a memwal-server whose tables and WAL are on S3", () => {
  let server: Server;
  beforeAll(async () => {
    server = await serve({
      dataDir: tmpDir(),
      data: s3TestUri("py-data"),
      wal: s3TestUri("py-wal"),
      storageOptions: s3TestOptions(),
      apiKey: "k",
    });
  });
  afterAll(async () => server.close());

  test("the same answers (namespaces refused by name)", async () => {
    await vectorChecks(server.url, false);
  }, 120_000);

  test("full-text and hybrid search: the same answers", async () => {
    await ftsChecks(server.url);
  }, 180_000);
});
