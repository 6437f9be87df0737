/**
 * Vector indexes through the TS API on a local folder table, an in-memory table and a table of the real
 * bundled server on 127.0.0.1 (through our remote client): build, list, stats, search answers checked
 * against a brute-force oracle, rows written after the build found by the very next search (memWal rows
 * still in the memtable included), optimize folding them in, waitForIndex, drop, and every refusal.
 */
import { Field, FixedSizeList, Int32, Schema, Uint8 } from "apache-arrow";
import { connect, Index, IndexNotFoundError, InvalidInputError, makeArrowTable, NotSupportedError, type Table, TimeoutError } from "../lib";
import { tableKinds, tmpDir } from "./helpers";

type Row = { id: number; kind: string; vector: number[] };
const DIM = 8;

function rnd(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Clustered rows: 16 centres, small integer-ish offsets. */
function rows(n: number, from = 0, seed = 1): Row[] {
  const r = rnd(seed);
  const centres = Array.from({ length: 16 }, (_, c) => Array.from({ length: DIM }, (_, j) => ((c * 7 + j * 3) % 11) * 4));
  return Array.from({ length: n }, (_, i) => ({
    id: from + i,
    kind: ["a", "b", "c"][(from + i) % 3],
    vector: centres[(from + i) % 16].map((x) => x + Math.round(r() * 8) / 4),
  }));
}

function oracle(data: Row[], q: number[], k: number): number[] {
  return data
    .map((r) => [r.id, r.vector.reduce((s, x, i) => s + (x - q[i]) ** 2, 0)] as [number, number])
    .sort((a, b) => a[1] - b[1] || a[0] - b[0])
    .slice(0, k)
    .map((p) => p[1]);
}

const ids = (out: Record<string, unknown>[]) => out.map((r) => Number(r.id));
const dists = (out: Record<string, unknown>[]) => out.map((r) => Number(r._distance));

const { kinds } = tableKinds();

describe.each(kinds)("indexes on a %s table", (kind, open) => {
  let t: Table;
  let data = rows(2000);
  beforeAll(async () => {
    const db = await open();
    t = await db.createTable(`ix_${kind.replace(/\W/g, "_")}`, data);
    await t.createIndex("vector", { config: Index.ivfPq({ numPartitions: 8, numSubVectors: 4 }) });
  });

  test("listed, with stats, and searched (exact when every partition is probed and refined)", async () => {
    const list = await t.listIndices();
    expect(list.map((i) => [i.name, i.indexType, i.columns])).toEqual([["vector_idx", "IvfPq", ["vector"]]]);
    expect(await t.indexStats("vector_idx")).toEqual({
      numIndexedRows: 2000,
      numUnindexedRows: 0,
      indexType: "IVF_PQ",
      distanceType: "l2",
      numIndices: 1,
    });
    expect(await t.indexStats("nope")).toBeUndefined();
    // 0.39's richer IndexConfig: the first segment's uuid, the build time, the files' bytes, segments and parameters.
    const [ix] = list;
    expect(ix.indexUuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect(Object.prototype.toString.call(ix.createdAt)).toBe("[object Date]");
    expect(Math.abs((ix.createdAt as Date).getTime() - Date.now())).toBeLessThan(10 * 60_000);
    expect(ix.sizeBytes).toBeGreaterThan(2000 * 4); // at least the PQ codes
    expect(ix.numSegments).toBe(1);
    expect(ix.indexDetails).toMatchObject({ num_partitions: 8 });
    for (const q of [data[5].vector, data[1234].vector.map((x) => x + 0.3)]) {
      const got = await t.search(q).nprobes(8).refineFactor(1000).limit(10).toArray();
      dists(got).forEach((d, i) => {
        expect(Math.abs(d - oracle(data, q, 10)[i])).toBeLessThan(1e-3);
      });
      // Default probes with refinement: the same nearest row.
      expect(dists(await t.search(q).refineFactor(10).limit(1).toArray())[0]).toBeCloseTo(oracle(data, q, 1)[0], 3);
    }
  });

  test("rows written after the build are found by the next search; optimize folds them in", async () => {
    const fresh = rows(30, 50_000, 9).map((r) => ({ ...r, vector: r.vector.map((x) => x + 0.1) }));
    if (kind === "served") {
      const r = await t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().memWal().execute(fresh);
      expect(r.numInsertedRows).toBe(30);
    } else {
      await t.add(fresh);
    }
    data = [...data, ...fresh];
    for (const r of fresh.slice(0, 5)) {
      const top = await t.search(r.vector).limit(1).toArray();
      expect([ids(top)[0], dists(top)[0]]).toEqual([r.id, 0]);
    }
    expect((await t.indexStats("vector_idx"))?.numUnindexedRows).toBe(30);
    // fastSearch: indexed rows only.
    expect(ids(await t.search(fresh[0].vector).fastSearch().limit(3).toArray())).not.toContain(fresh[0].id);
    await expect(t.waitForIndex(["vector_idx"], 0)).rejects.toThrow(TimeoutError);
    await expect(t.waitForIndex(["vector_idx"], 0)).rejects.toThrow("vector_idx (30 rows unindexed)");
    await t.optimize();
    expect(await t.indexStats("vector_idx")).toMatchObject({ numIndexedRows: 2030, numUnindexedRows: 0 });
    await t.waitForIndex(["vector_idx"], 5);
    const top = await t.search(fresh[0].vector).fastSearch().refineFactor(50).limit(1).toArray();
    expect(ids(top)).toEqual([fresh[0].id]);
  });

  test("HNSW over scalar-quantised vectors: built, listed, searched, fresh rows found", async () => {
    await t.createIndex("vector", { config: Index.hnswSq({ m: 12, efConstruction: 64 }), name: "vh" });
    const list = await t.listIndices();
    expect(list.map((i) => [i.name, i.indexType])).toEqual([["vh", "IvfHnswSq"]]);
    expect((await t.indexStats("vh"))?.numUnindexedRows).toBe(0);
    for (const q of [data[11].vector, data[1500].vector.map((x) => x + 0.2)]) {
      const got = await t.search(q).ef(400).refineFactor(5).limit(10).toArray();
      dists(got).forEach((d, i) => {
        expect(Math.abs(d - oracle(data, q, 10)[i])).toBeLessThan(1e-3);
      });
    }
    const fresh = rows(3, 80_000, 5).map((r) => ({ ...r, vector: r.vector.map((x) => x - 0.05) }));
    await t.add(fresh);
    data = [...data, ...fresh];
    expect(ids(await t.search(fresh[1].vector).limit(1).toArray())).toEqual([fresh[1].id]);
  });

  test("bad configs are clear errors; unsupported types say so; drop", async () => {
    await expect(t.createIndex("vector", { config: Index.hnswPq() })).rejects.toThrow(NotSupportedError);
    await expect(t.createIndex("vector", { config: Index.hnswPq() })).rejects.toThrow("IVF_HNSW_PQ is not supported");
    await expect(t.createIndex("id", { config: Index.labelList() })).rejects.toThrow(NotSupportedError);
    await expect(t.createIndex("vector", { config: Index.btree() })).rejects.toThrow("cannot build BTREE on vector column");
    await expect(t.createIndex("vector", { config: Index.ivfPq({ numSubVectors: 3 }) })).rejects.toThrow("must divide");
    await expect(t.createIndex("nope")).rejects.toThrow("no such column");
    await expect(t.createIndex("vector", { config: Index.ivfPq({ numPartitions: 8 }), replace: false })).rejects.toThrow(
      "Index 'vh' already exists on column 'vector'",
    );
    expect(() => Index.ivfPq({ numPartitions: -1 })).toThrow(InvalidInputError);
    expect(() => Index.ivfFlat({ numSubVectors: 4 } as never)).toThrow('unknown option "numSubVectors" for IVF_FLAT');
    await expect(t.createIndex("vector", { bogus: 1 } as never)).rejects.toThrow(InvalidInputError);
    expect(() => Index.hnswSq({ m: 1.5 })).toThrow(InvalidInputError);
    // Replace with IVF_FLAT under another name: one index on the column.
    await t.createIndex("vector", { config: Index.ivfFlat({ numPartitions: 4, distanceType: "cosine" }), name: "vflat" });
    expect((await t.listIndices()).map((i) => [i.name, i.indexType])).toEqual([["vflat", "IvfFlat"]]);
    await t.dropIndex("vflat");
    expect(await t.listIndices()).toEqual([]);
    await expect(t.dropIndex("vflat")).rejects.toThrow(IndexNotFoundError);
    // Searches go on exactly without an index.
    const q = data[77].vector;
    expect(dists(await t.search(q).limit(5).toArray())).toEqual(oracle(data, q, 5));
  });
});

test("an older version keeps the index it had; a checkout searches with it", async () => {
  const db = await connect(tmpDir());
  const t = await db.createTable("old", rows(500));
  const v1 = await t.version();
  await t.createIndex("vector", { config: Index.ivfFlat({ numPartitions: 4 }) });
  const v2 = await t.version();
  await t.dropIndex("vector_idx");
  await t.checkout(v1);
  expect(await t.listIndices()).toEqual([]);
  await t.checkout(v2);
  expect((await t.listIndices()).map((i) => i.name)).toEqual(["vector_idx"]);
  const q = rows(500)[9].vector;
  expect(dists(await t.search(q).limit(3).toArray())).toEqual(oracle(rows(500), q, 3));
});

describe.each(kinds)("BTREE and BITMAP on a %s table", (kind, open) => {
  test("filters answer as without it: rows written after the build, deleted, updated and memWal rows included", async () => {
    const db = await open();
    const name = `bt_${kind.replace(/\W/g, "_")}`;
    let data = rows(3000);
    const t = await db.createTable(name, data);
    const plain = await (await connect("memory://")).createTable(name, data);
    await t.createIndex("id", { config: Index.btree() });
    // A low-cardinality column: Lance's BITMAP (memwal builds it with the BTREE's structure).
    await t.createIndex("kind", { config: Index.bitmap() });
    expect((await t.listIndices()).map((i) => [i.name, i.indexType, i.numIndexedRows])).toEqual([
      ["id_idx", "BTree", 3000],
      ["kind_idx", "Bitmap", 3000],
    ]);
    expect(await t.indexStats("kind_idx")).toMatchObject({ indexType: "BITMAP", numIndexedRows: 3000, numUnindexedRows: 0 });
    const filters = [
      "id = 17",
      "id IN (1, 2999, 3000, 40000)",
      "id >= 2990",
      "id < 5 OR id > 2995",
      "id BETWEEN 100 AND 110 AND kind = 'b'",
      "kind = 'c' AND id < 30",
      "kind > 'a' AND id <= 12",
      "id = 5.5",
      "id = '12'",
    ];
    const same = async () => {
      for (const f of filters) {
        const a = (await t.query().where(f).select(["id"]).toArray()).map((r) => Number(r.id)).sort((x, y) => x - y);
        const b = (await plain.query().where(f).select(["id"]).toArray()).map((r) => Number(r.id)).sort((x, y) => x - y);
        expect([f, a]).toEqual([f, b]);
        expect([f, await t.countRows(f)]).toEqual([f, await plain.countRows(f)]);
        // A vector search prefiltered by it: every matching row (under 100 here), same distances.
        const hits = async (x: Table) =>
          (await x.search(data[7].vector).where(f).limit(100).toArray())
            .map((r) => `${Number(r.id)}:${Number(r._distance).toFixed(3)}`)
            .sort();
        expect([f, await hits(t)]).toEqual([f, await hits(plain)]);
      }
    };
    await same();
    const more = rows(20, 3000, 7);
    for (const x of [t, plain]) {
      await x.add(more);
      await x.delete("id = 17 OR id = 2999");
      await x.update({ where: "id = 1", values: { kind: "z" } });
      await x
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute([{ ...more[0], id: 12, kind: "c" }]);
    }
    data = [...data, ...more];
    await same();
    if (kind === "served") {
      // memWal rows still in the memtable: found by the next filtered read.
      const fresh = [
        { ...more[1], id: 50_000, kind: "b" },
        { ...data[2], kind: "q" },
      ];
      await t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().memWal().execute(fresh);
      await plain.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(fresh);
      filters.push("id = 50000", "id = 2", "kind = 'q'");
      await same();
    }
    if (kind !== "served") await t.optimize();
    await same();
    await t.dropIndex("id_idx");
    await same();
  }, 60_000);
});

describe.each(kinds)("binary vectors on a %s table", (kind, open) => {
  test("hamming distance: flat, then IVF_FLAT (the default for uint8 vectors), equal to a popcount oracle", async () => {
    const db = await open();
    const r = rnd(7);
    const bytes = (n: number) => Array.from({ length: n }, () => Math.floor(r() * 256));
    const data = Array.from({ length: 400 }, (_, id) => ({ id, vec: bytes(8) }));
    const schema = new Schema([
      new Field("id", new Int32(), true),
      new Field("vec", new FixedSizeList(8, new Field("item", new Uint8(), true)), true),
    ]);
    const t = await db.createTable(`bin_${kind.replace(/\W/g, "_")}`, makeArrowTable(data, { schema }));
    const popcount = (x: number) => x.toString(2).replace(/0/g, "").length;
    const hamming = (a: number[], b: number[]) => a.reduce((s, x, i) => s + popcount(x ^ b[i]), 0);
    // Distances of the k nearest (ties at the last place may pick any tied row, so distances are compared).
    const want = (q: number[], k: number) =>
      data
        .map((d) => hamming(d.vec, q))
        .sort((a, b) => a - b)
        .slice(0, k);
    const got = async (q: number[], k: number, nprobes?: number) => {
      const search = t.query().nearestTo(q).limit(k);
      const rows = await (nprobes === undefined ? search : search.nprobes(nprobes)).toArray();
      for (const row of rows) expect(Number(row._distance)).toBe(hamming(data[Number(row.id)].vec, q));
      return dists(rows);
    };
    const queries = [bytes(8), bytes(8), data[5].vec];
    for (const q of queries) expect(await got(q, 10)).toEqual(want(q, 10));
    await expect(t.query().nearestTo(queries[0]).distanceType("l2").toArray()).rejects.toThrow("distance type hamming");
    await expect(t.query().nearestTo([1, 2, 3, 4, 5, 6, 7, 300]).toArray()).rejects.toThrow("integers 0 to 255");
    await t.createIndex("vec", { config: Index.ivfFlat({ numPartitions: 4, distanceType: "hamming" }) });
    const [ix] = await t.listIndices();
    expect([ix.indexType, ix.distanceType]).toEqual(["IvfFlat", "hamming"]);
    for (const q of queries) expect(await got(q, 10, 4)).toEqual(want(q, 10));
    await expect(t.createIndex("vec", { config: Index.ivfPq() })).rejects.toThrow("IVF_FLAT and hamming distance");
    // No config: a binary column's default index, on every kind of table (a served one through our client).
    await t.dropIndex("vec_idx");
    await t.createIndex("vec");
    const [def] = await t.listIndices();
    expect([def.indexType, def.distanceType]).toEqual(["IvfFlat", "hamming"]);
  });
});
