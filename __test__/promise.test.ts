/**
 * Regressions of the hostile probe of the newer surfaces (each failed before its fix), on a local folder table,
 * an in-memory table and a table of the real bundled server: an upsert that omits a nullable column keeps its
 * value (memWal included, and after addColumns), a rename that swaps two indexed columns moves their indexes,
 * concurrent creates of one tag leave one winner, reserved column names are refused, select(["_rowid"]) answers
 * the row ids.
 */
import { InvalidInputError } from "../lib";
import { tableKinds } from "./helpers";

const { kinds } = tableKinds();

const name = (kind: string, t: string) => `${t}_${kind.replace(/\W/g, "_")}`;
const byId = async (t: import("../lib").Table, cols: string[]) =>
  (
    await t
      .query()
      .select(["id", ...cols])
      .toArray()
  )
    .map((r) => [Number(r.id), ...cols.map((c) => (r[c] === null ? null : typeof r[c] === "bigint" ? Number(r[c]) : r[c]))])
    .sort((a, b) => (a[0] as number) - (b[0] as number));

describe.each(kinds)("the one promise on a %s table", (kind, open) => {
  const memWal = kind === "served";
  const upsert = (t: import("../lib").Table, rows: Array<Record<string, unknown>>) => {
    const b = t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll();
    return (memWal ? b.memWal() : b).execute(rows);
  };

  test("an upsert omitting nullable columns keeps their values on matched rows, nulls on new ones", async () => {
    const db = await open();
    const t = await db.createTable(name(kind, "omit"), [
      { id: 1, v: 10, s: "a" },
      { id: 2, v: 20, s: "b" },
    ]);
    await upsert(t, [
      { id: 1, v: 11 },
      { id: 3, v: 30 },
    ]);
    expect(await byId(t, ["v", "s"])).toEqual([
      [1, 11, "a"],
      [2, 20, "b"],
      [3, 30, null],
    ]);
    // Twice on a row still buffered: the value comes from the newer row, not the base.
    await upsert(t, [{ id: 1, s: "z" }]);
    await upsert(t, [{ id: 1, v: 12 }]);
    expect(await byId(t, ["v", "s"])).toEqual([
      [1, 12, "z"],
      [2, 20, "b"],
      [3, 30, null],
    ]);
    // After addColumns, a client still sending the old columns does not wipe the new one.
    await t.addColumns([{ name: "w", valueSql: "v * 2" }]);
    await upsert(t, [{ id: 2, v: 21, s: "b2" }]);
    expect(await byId(t, ["v", "s", "w"])).toEqual([
      [1, 12, "z", 24],
      [2, 21, "b2", 40],
      [3, 30, null, 60],
    ]);
    if (memWal) await t.flushLsm(); // a local table has no MemWAL to flush (refused, as 0.39)
    expect(await byId(t, ["v", "s", "w"])).toEqual([
      [1, 12, "z", 24],
      [2, 21, "b2", 40],
      [3, 30, null, 60],
    ]);
  });

  test("a rename swapping two indexed columns moves each index with its values", async () => {
    const db = await open();
    const t = await db.createTable(
      name(kind, "swap"),
      Array.from({ length: 20 }, (_, i) => ({ a: BigInt(1000 + i), b: BigInt(i) })),
    );
    await t.createIndex("a");
    await t.createIndex("b");
    await t.alterColumns([
      { path: "a", rename: "b" },
      { path: "b", rename: "a" },
    ]);
    expect(await t.countRows("a = 5")).toBe(1);
    expect(await t.countRows("b = 1005")).toBe(1);
    expect(await t.countRows("a = 1005")).toBe(0);
    const cols = Object.fromEntries((await t.listIndices()).map((i) => [i.name, i.columns]));
    expect(cols).toEqual({ a_idx: ["b"], b_idx: ["a"] });
  });

  test("two concurrent creates of one tag: one wins, the other is refused", async () => {
    const db = await open();
    const t = await db.createTable(name(kind, "tagrace"), [{ id: 1 }]);
    const v1 = await t.version();
    await t.add([{ id: 2 }]);
    const tags = await t.tags();
    const results = await Promise.allSettled([tags.create("x", v1), tags.create("x", v1 + 1), tags.create("x", v1)]);
    expect(results.filter((r) => r.status === "fulfilled")).toHaveLength(1);
    for (const r of results.filter((r) => r.status === "rejected")) {
      expect((r as PromiseRejectedResult).reason.message).toMatch(/already has the tag 'x'/);
    }
  });

  test("reserved column names are refused at create, add and rename; select(['_rowid']) answers row ids", async () => {
    const db = await open();
    for (const col of ["_rowid", "_rowoffset", "_distance", "_score", "_relevance_score", "query_index"]) {
      await expect(db.createTable(name(kind, "res"), [{ id: 1, [col]: 2 }])).rejects.toThrow(`'${col}' is reserved`);
    }
    const t = await db.createTable(name(kind, "res"), [{ id: 1, v: 2 }]);
    await expect(t.addColumns([{ name: "_distance", valueSql: "v" }])).rejects.toBeInstanceOf(InvalidInputError);
    await expect(t.alterColumns([{ path: "v", rename: "_rowid" }])).rejects.toThrow(/reserved/);
    const r = await t.query().select(["_rowid"]).toArray();
    expect(r).toHaveLength(1);
    expect(Object.keys(r[0])).toEqual(["_rowid"]);
    const [withId] = await t.query().withRowId().toArray();
    expect(r[0]._rowid).toBe(withId._rowid);
  });

  test("orderBy on _rowoffset / _rowid sorts by them; take queries explain themselves", async () => {
    const db = await open();
    const t = await db.createTable(
      name(kind, "ord"),
      [3, 1, 2].map((id) => ({ id, v: id * 10 })),
    );
    const scan = (await t.query().toArray()).map((r) => Number(r.id));
    const back = await t.query().orderBy({ columnName: "_rowoffset", ascending: false }).toArray();
    expect(back.map((r) => Number(r.id))).toEqual([...scan].reverse());
    expect(Object.keys(back[0])).toEqual(["id", "v"]);
    const byId = await t.query().withRowId().orderBy({ columnName: "_rowid" }).toArray();
    const ids = byId.map((r) => BigInt(r._rowid as bigint));
    expect([...ids].sort((a, b) => (a < b ? -1 : 1))).toEqual(ids);
    const plan = await t.takeOffsets([0, 2]).explainPlan();
    expect(plan).toMatch(/numbered in scan order/);
    expect(await t.takeOffsets([0, 2]).analyzePlan()).toMatch(/ran: 2 row/);
  });

  test("non-finite vector components are refused at write; a multi-vector answer is bounded", async () => {
    const db = await open();
    const t = await db.createTable(name(kind, "vec"), [{ id: 1, vector: [1, 2] }]);
    for (const bad of [Number.POSITIVE_INFINITY, Number.NaN]) {
      await expect(t.add([{ id: 2, vector: [bad, 1] }])).rejects.toThrow(/non-finite value .* at position 0/);
      await expect(upsert(t, [{ id: 2, vector: [1, bad] }])).rejects.toThrow(/non-finite value .* at position 1/);
    }
    expect(await t.countRows()).toBe(1);
    const many = t.vectorSearch([
      [1, 2],
      [2, 1],
    ]);
    await expect(many.limit(600_000).toArray()).rejects.toThrow(/at most 1000000 rows/);
    expect(await many.limit(5).toArray()).toHaveLength(2);
  });
});
