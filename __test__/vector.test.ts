/**
 * Vector search through the TS API, on a local folder table, an in-memory
 * table and a table of the real bundled server on 127.0.0.1 (memWal rows
 * still in the memtable included), each answer compared with a brute-force
 * oracle written here.
 */
import { InvalidInputError, type Table } from "../lib";
import { tableKinds } from "./helpers";

type Row = { id: number; kind: string; vector: number[] };

function rnd(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return (s >>> 8) / (1 << 24);
  };
}

const DIM = 8;
function rows(n: number, from = 0, seed = 1): Row[] {
  const r = rnd(seed);
  return Array.from({ length: n }, (_, i) => ({
    id: from + i,
    kind: ["a", "b", "c"][(from + i) % 3],
    vector: Array.from({ length: DIM }, () => Math.round((r() * 8 - 4) * 4) / 4),
  }));
}

function dist(type: string, q: number[], v: number[]): number {
  const dot = q.reduce((s, x, i) => s + x * v[i], 0);
  if (type === "l2") return q.reduce((s, x, i) => s + (x - v[i]) ** 2, 0);
  if (type === "dot") return 1 - dot;
  const n = (a: number[]) => Math.sqrt(a.reduce((s, x) => s + x * x, 0));
  return 1 - dot / (n(q) * n(v));
}

/** Ids and distances the oracle expects (ties broken by id, as rows were added in id order). */
function oracle(data: Row[], q: number[], type: string, k: number, keep: (r: Row) => boolean = () => true): Array<[number, number]> {
  return data
    .filter(keep)
    .map((r) => [r.id, dist(type, q, r.vector)] as [number, number])
    .sort((a, b) => a[1] - b[1] || a[0] - b[0])
    .slice(0, k);
}

function pairs(rowsOut: Record<string, unknown>[]): Array<[number, number]> {
  return rowsOut.map((r) => [Number(r.id), Number(r._distance)]);
}

function expectClose(got: Array<[number, number]>, want: Array<[number, number]>): void {
  expect(got.map((p) => p[0])).toEqual(want.map((p) => p[0]));
  got.forEach((p, i) => {
    expect(Math.abs(p[1] - want[i][1])).toBeLessThan(1e-4);
  });
}

const { kinds, remote } = tableKinds();

describe.each(kinds)("vector search on a %s table", (kind, open) => {
  let t: Table;
  const data = rows(300);
  beforeAll(async () => {
    const db = await open();
    t = await db.createTable(`v_${kind.replace(/\W/g, "_")}`, data);
  });

  test("every distance type, the three entry points, typed arrays", async () => {
    const q = data[17].vector;
    for (const type of ["l2", "cosine", "dot"] as const) {
      const got = await t.search(q).distanceType(type).limit(7).toArray();
      expectClose(pairs(got), oracle(data, q, type, 7));
    }
    expect(pairs(await t.search(q).toArray())[0]).toEqual([17, 0]);
    expect((await t.search(q).toArray()).length).toBe(10);
    const f32 = pairs(await t.vectorSearch(Float32Array.from(q)).limit(3).toArray());
    const f64 = pairs(await t.query().nearestTo(Float64Array.from(q)).limit(3).toArray());
    expect(f32).toEqual(f64);
    const arrow = await t.search(q).limit(2).toArrow();
    expect(arrow.schema.fields.map((f) => f.name)).toEqual(["id", "kind", "vector", "_distance"]);
    let batches = 0;
    for await (const b of t.search(q).limit(5)) batches += b.numRows;
    expect(batches).toBe(5);
  });

  test("prefilter, postfilter, select, offset, range, row ids", async () => {
    const q = data[3].vector;
    const isA = (r: Row) => r.kind === "a";
    expectClose(pairs(await t.search(q).where("kind = 'a'").limit(12).toArray()), oracle(data, q, "l2", 12, isA));
    const top = oracle(data, q, "l2", 12);
    const post = pairs(await t.search(q).where("kind = 'a'").postfilter().limit(12).toArray());
    expectClose(
      post,
      top.filter(([id]) => data[id].kind === "a"),
    );
    const page = pairs(await t.search(q).offset(5).limit(4).toArray());
    expectClose(page, oracle(data, q, "l2", 9).slice(5));
    const sel = await t.search(q).select(["id"]).withRowId().limit(3).toArrow();
    expect(sel.schema.fields.map((f) => f.name)).toEqual(["id", "_distance", "_rowid"]);
    const ranged = pairs(await t.search(q).distanceRange(1, 20).limit(1000).toArray());
    expect(ranged.length).toBe(
      data.filter((r) => {
        const d = dist("l2", q, r.vector);
        return d >= 1 && d < 20;
      }).length,
    );
    expect(ranged.every(([, d]) => d >= 1 && d < 20)).toBe(true);
    const ids = await t.query().withRowId().toArray();
    expect(new Set(ids.map((r) => String(r._rowid))).size).toBe(data.length);
  });

  test("several query vectors: a query_index column, k each", async () => {
    const qs = [data[1].vector, data[2].vector, data[9].vector];
    const got = await t.vectorSearch(qs).limit(4).toArray();
    expect(got.length).toBe(12);
    qs.forEach((q, i) => {
      const mine = got.filter((r) => r.query_index === i);
      expectClose(pairs(mine), oracle(data, q, "l2", 4));
    });
    const added = await t.search(qs[0]).addQueryVector(qs[1]).limit(2).toArray();
    expect(added.map((r) => r.query_index)).toEqual([0, 0, 1, 1]);
  });

  test("bad input: clear errors, nothing crashes", async () => {
    await expect(t.search([1, 2, 3]).toArray()).rejects.toThrow(/^No vector column of dimension 3/);
    await expect(t.search([1, 2, 3]).column("vector").toArray()).rejects.toThrow(
      /^Invalid input, query dim\(3\) doesn't match the column vector vector dim\(8\): .*dimension 3.*dimension 8/,
    );
    await expect(t.search(data[0].vector).column("kind").toArray()).rejects.toThrow(/not a vector column/);
    expect(() => t.search([1, NaN, 3])).toThrow(InvalidInputError);
    expect(() => t.search([])).toThrow(/empty/);
    expect(() => t.search(data[0].vector).distanceType("manhattan" as "l2")).toThrow(/manhattan/);
    await expect(t.search(data[0].vector).limit(0).toArray()).rejects.toThrow(/at least 1/);
    await expect(t.search(data[0].vector).where("nope > 1").toArray()).rejects.toThrow(/nope/);
    expect((await t.search(data[0].vector).limit(1e9).toArray()).length).toBe(data.length);
    expect(() => t.search(data[0].vector).distanceRange(NaN)).toThrow(InvalidInputError);
  });
});

test("served: a memWal upsert is found by the very next search, old vectors never", async () => {
  const t = await remote().createTable("fresh", rows(200));
  const fresh = rows(50, 1000, 7);
  // Rows 0..9 get new vectors (far away); 1000.. are new.
  const moved = rows(10, 0, 99).map((r) => ({ ...r, vector: r.vector.map((x) => x + 100) }));
  const res = await t
    .mergeInsert("id")
    .whenMatchedUpdateAll()
    .whenNotMatchedInsertAll()
    .memWal()
    .execute([...fresh, ...moved]);
  expect([res.numInsertedRows, res.numUpdatedRows]).toEqual([50, 10]);
  for (const r of fresh.slice(0, 5)) {
    expect(pairs(await t.search(r.vector).limit(1).toArray())[0]).toEqual([r.id, 0]);
  }
  // The old vector of row 3 finds no row 3 any more; its new one does.
  const old = rows(200)[3].vector;
  expect(pairs(await t.search(old).limit(5).toArray()).map((p) => p[0])).not.toContain(3);
  expect(pairs(await t.search(moved[3].vector).limit(1).toArray())[0]).toEqual([3, 0]);
  // A model of the whole table agrees with the search.
  const all: Row[] = [...rows(200).slice(10), ...moved, ...fresh].sort((a, b) => a.id - b.id);
  const q = fresh[7].vector;
  const got = pairs(await t.search(q).limit(20).toArray());
  expect(got.map((p) => p[1])).toEqual(oracle(all, q, "l2", 20).map((p) => p[1]));
});
