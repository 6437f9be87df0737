/**
 * Plain-query features through the TS API on a local folder table, an in-memory table and a table of the real
 * bundled server (through our remote client, memWal rows still buffered included): orderBy (every direction and
 * nulls placement, several keys, before offset and limit) against a plain JS sort of the same rows, SQL
 * projections select({ alias: sql }), filters on struct fields, and what is refused says why.
 */
import { tableFromJSON } from "apache-arrow";
import { InvalidInputError, NotSupportedError, type Table } from "../lib";
import { tableKinds } from "./helpers";

const { kinds } = tableKinds();

type Row = { id: number; v: number | null; s: string; st: { a: number; b: string } };

/** A small deterministic generator (the same rows on every run). */
function rowsFor(n: number, seed: number): Row[] {
  let x = seed;
  const next = () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return x / 2147483648;
  };
  return Array.from({ length: n }, (_, i) => ({
    id: i,
    v: next() < 0.2 ? null : Math.floor(next() * 10),
    s: ["a", "b", "c"][Math.floor(next() * 3)],
    st: { a: Math.floor(next() * 5), b: `b${i % 4}` },
  }));
}

/** The JS reference of orderBy: keys in turn, ties in scan (id) order. */
function sortRef(rows: Row[], keys: Array<{ col: "v" | "s" | "id"; asc: boolean; nullsFirst: boolean }>): Row[] {
  return [...rows].sort((a, b) => {
    for (const k of keys) {
      const [x, y] = [a[k.col], b[k.col]];
      if (x === y) continue;
      if (x === null) return k.nullsFirst ? -1 : 1;
      if (y === null) return k.nullsFirst ? 1 : -1;
      const c = x < y ? -1 : 1;
      return k.asc ? c : -c;
    }
    return a.id - b.id;
  });
}

async function load(open: () => Promise<import("../lib").Connection>, kind: string, name: string): Promise<[Table, Row[]]> {
  const rows = rowsFor(60, 7);
  const db = await open();
  const data = tableFromJSON(rows.slice(0, 50) as unknown as Record<string, unknown>[]);
  const t = await db.createTable(`${name}_${kind.replace(/\W/g, "_")}`, data);
  // The last rows arrive by merge insert (on the MemWAL path on the server: still buffered when read).
  const b = t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll();
  await (kind === "served" ? b.memWal() : b).execute(tableFromJSON(rows.slice(50) as unknown as Record<string, unknown>[]));
  return [t, rows];
}

describe.each(kinds)("queries on a %s table", (kind, open) => {
  test("orderBy sorts as a plain sort does, before offset and limit", async () => {
    const [t, rows] = await load(open, kind, "order");
    const cases: Array<Array<{ col: "v" | "s" | "id"; asc: boolean; nullsFirst: boolean }>> = [
      [{ col: "v", asc: true, nullsFirst: false }],
      [{ col: "v", asc: false, nullsFirst: true }],
      [{ col: "v", asc: true, nullsFirst: true }],
      [
        { col: "s", asc: false, nullsFirst: false },
        { col: "v", asc: true, nullsFirst: false },
      ],
    ];
    for (const keys of cases) {
      // The id last: the order of ties is not specified (a served table's buffered rows come in hash order).
      const order = [...keys.map((k) => ({ columnName: k.col, ascending: k.asc, nullsFirst: k.nullsFirst })), { columnName: "id" }];
      const got = await t.query().orderBy(order).select(["id"]).toArray();
      expect(got.map((r) => Number(r.id))).toEqual(sortRef(rows, keys).map((r) => r.id));
      const page = await t.query().where("id >= 10").orderBy(order).offset(5).limit(7).select(["id"]).toArray();
      const want = sortRef(
        rows.filter((r) => r.id >= 10),
        keys,
      ).slice(5, 12);
      expect(page.map((r) => Number(r.id))).toEqual(want.map((r) => r.id));
    }
    // Defaults: ascending, nulls last; one key may be given alone; the row id goes along.
    const one = await t
      .query()
      .orderBy([{ columnName: "v" }, { columnName: "id" }])
      .withRowId()
      .limit(3)
      .toArray();
    expect(one.map((r) => Number(r.id))).toEqual(
      sortRef(rows, [{ col: "v", asc: true, nullsFirst: false }])
        .slice(0, 3)
        .map((r) => r.id),
    );
    expect(Object.keys(one[0]).at(-1)).toBe("_rowid");
    await expect(t.query().orderBy({ columnName: "nope" }).toArray()).rejects.toThrow(/nope/);
  });

  test("select({ alias: sql }) computes columns; struct fields filter and project", async () => {
    const [t, rows] = await load(open, kind, "proj");
    const got = await t
      .query()
      .where("st.a >= 3 AND id < 55")
      .select({ id: "id", twice: "id * 2", up: "upper(s)", b: "st.b" })
      .orderBy({ columnName: "id" })
      .toArray();
    const want = rows.filter((r) => r.st.a >= 3 && r.id < 55);
    expect(got).toEqual(want.map((r) => ({ id: r.id, twice: r.id * 2, up: r.s.toUpperCase(), b: r.st.b })));
    // A Map keeps its order; a name alone is a column.
    const m = await t
      .query()
      .select(
        new Map([
          ["z", "id + 1"],
          ["id", "id"],
        ]),
      )
      .limit(1)
      .toArray();
    expect(Object.keys(m[0])).toEqual(["z", "id"]);
    expect((await t.query().select("s").limit(2).toArray()).map((r) => Object.keys(r))).toEqual([["s"], ["s"]]);
    expect(await t.countRows("st.b = 'b1'")).toBe(rows.filter((r) => r.st.b === "b1").length);
    await expect(t.query().select({ x: "nope + 1" }).toArray()).rejects.toThrow(InvalidInputError);
    await expect(t.query().where("st.nope = 1").toArray()).rejects.toThrow(/st\.nope/);
  });
});

describe.each(kinds)("plans on a %s table", (kind, open) => {
  test("explainPlan says what is read, which index narrows, order, page and output; analyzePlan runs it", async () => {
    const [t] = await load(open, kind, "plan");
    const plain = await t.query().where("id = 3").explainPlan();
    expect(plain).toMatch(/filter: id = 3/);
    expect(plain).toMatch(/every live row is tested/);
    expect(plain).toMatch(/output: id, v, s, st/);
    if (kind === "served") expect(plain).toMatch(/MemWAL: 10 buffered row\(s\)/);
    await t.createIndex("id");
    const indexed = await t
      .query()
      .where("id = 3")
      .select({ twice: "id * 2" })
      .orderBy({ columnName: "v", ascending: false })
      .limit(2)
      .explainPlan(true);
    expect(indexed).toMatch(/BTREE index picks the candidate rows/);
    expect(indexed).toMatch(/order: v DESC NULLS FIRST/);
    expect(indexed).toMatch(/page: offset 0, limit 2/);
    expect(indexed).toMatch(/output: twice = id \* 2/);
    expect(indexed).toMatch(/fragment \d+: \d+ row\(s\)/);
    const analyzed = await t.query().where("id < 5").analyzePlan();
    expect(analyzed).toMatch(/ran: 5 row\(s\) in [\d.]+ ms/);
    await expect(t.query().where("nope = 1").explainPlan()).rejects.toThrow(/nope/);
  });
});

test("explainPlan of a vector search names the index and what is searched exactly", async () => {
  const { connect } = await import("../lib");
  const db = await connect("memory://");
  const rows = Array.from({ length: 300 }, (_, i) => ({ id: i, vector: [Math.sin(i), Math.cos(i), i % 7] }));
  const t = await db.createTable("vp", rows);
  expect(await t.search([1, 0, 0]).explainPlan()).toMatch(/exact search of every row \(no vector index on 'vector'\)/);
  const { Index } = await import("../lib");
  await t.createIndex("vector", { config: Index.ivfFlat({ numPartitions: 4 }) });
  await t.add([{ id: 1000, vector: [0, 0, 0] }]);
  const p = await t.search([1, 0, 0]).where("id > 5").explainPlan();
  expect(p).toMatch(/vector search: column 'vector' \(dimension 3\), 1 query vector\(s\), k 10, distance l2/);
  expect(p).toMatch(/index IVF_FLAT 'vector_idx': 300 row\(s\)/);
  expect(p).toMatch(/1 row\(s\) not in the index: searched exactly/);
  expect(p).toMatch(/filter before ranking \(prefilter\): id > 5/);
});

test("orderBy on a vector search is refused by name", async () => {
  const { connect } = await import("../lib");
  const db = await connect("memory://");
  const t = await db.createTable("v", [{ id: 1, vector: [1, 2] }]);
  await expect(t.search([1, 2]).orderBy({ columnName: "id" }).toArray()).rejects.toThrow(NotSupportedError);
});

describe.each(kinds)("take on a %s table", (kind, open) => {
  test("takeOffsets and takeRowIds answer the rows asked for, in scan order", async () => {
    const [t, rows] = await load(open, kind, "take");
    const all = await t.query().withRowId().toArray();
    expect(all.length).toBe(rows.length);
    const offsets = [0, 7, 49, 50, 59, 1000];
    const byOffset = await t.takeOffsets(offsets).toArray();
    expect(byOffset.map((r) => Number(r.id))).toEqual([0, 7, 49, 50, 59].map((o) => Number(all[o].id)));
    expect(Object.keys(byOffset[0])).toEqual(["id", "v", "s", "st"]);
    // Row ids of stored and (on the server) buffered rows, big ones included.
    const pick = [all[3], all[52], all[58]];
    const ids = pick.map((r) => r._rowid as bigint);
    const byId = await t
      .takeRowIds([...ids, 123456789n])
      .select(["id"])
      .withRowId()
      .toArray();
    expect(byId.map((r) => [Number(r.id), r._rowid])).toEqual(pick.map((r) => [Number(r.id), r._rowid]));
    expect(await t.takeRowIds([]).toArray()).toEqual([]);
    expect(() => t.takeOffsets([-1])).toThrow(InvalidInputError);
    expect(() => t.takeRowIds([1.5])).toThrow(InvalidInputError);
    expect(() => t.takeRowIds([1.5])).toThrow("Row id must be an integer (or bigint)");
    // The filter may read _rowoffset with other columns, and page.
    const paged = await t.query().where("_rowoffset < 10 AND v IS NOT NULL").limit(2).offset(1).toArray();
    const want = all.slice(0, 10).filter((r) => r.v !== null);
    expect(paged.map((r) => Number(r.id))).toEqual(want.slice(1, 3).map((r) => Number(r.id)));
  });
});
