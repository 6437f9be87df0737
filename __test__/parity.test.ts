/**
 * Calls that @lancedb/lancedb 0.39 answers one way and memwal once answered silently another, on a local folder
 * table, an in-memory table and a table of the real bundled server: repeated where() ANDs its filters (query and
 * search), checkout() moves the handle in place and refuses writes until checkoutLatest(), SQL types are read as
 * Lance reads them (FLOAT is Float32, REAL refused, a column from a non-null literal is non-nullable), and
 * options memwal does not honour are errors (storageOptions), while add's progress callback is called, and a
 * merge's numRows counts the rows it wrote.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { Float32, Int64 } from "apache-arrow";
import * as memwal from "../lib";
import { InvalidInputError, NotSupportedError } from "../lib";
import { tableKinds, tmpDir } from "./helpers";

const { kinds } = tableKinds();

const rows = [0.5, 1.2, 2.8, 3.5].map((score, i) => ({ id: i, score, vector: [i, 1] }));
const name = (kind: string, t: string) => `${t}_${kind.replace(/\W/g, "_")}`;

describe.each(kinds)("0.39 parity on a %s table", (kind, open) => {
  test("numRows counts rows written, as 0.39 does: a key matching two rows writes two, an unwritten match none", async () => {
    // Measured on @lancedb/lancedb 0.39.0: this upsert answers numRows 4 for 3 source rows; memwal once said 3.
    const db = await open();
    const t = await db.createTable(name(kind, "numrows"), [
      { id: 1, x: 10 },
      { id: 2, x: 20 },
    ]);
    await t.add([{ id: 2, x: 21 }]);
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([
        { id: 1, x: 11 },
        { id: 2, x: 22 },
        { id: 3, x: 30 },
      ]);
    expect([r.numUpdatedRows, r.numInsertedRows, r.numRows]).toEqual([3, 1, 4]);
    const ins = await t
      .mergeInsert("id")
      .whenNotMatchedInsertAll()
      .execute([
        { id: 1, x: 99 },
        { id: 4, x: 40 },
      ]);
    expect([ins.numUpdatedRows, ins.numInsertedRows, ins.numRows]).toEqual([0, 1, 1]);
    expect(await t.countRows()).toBe(5);
  });

  test("a key whose value is undefined is absent: an update keeps that column (merge, memWal on served)", async () => {
    // Measured on @lancedb/lancedb 0.39.0: [{ id: 1, x: undefined, s: "A" }] leaves x out, so id 1 keeps x = 10;
    // memwal once sent a column of nulls and overwrote it.
    const db = await open();
    const t = await db.createTable(name(kind, "undef"), [
      { id: 1, x: 10, s: "a" },
      { id: 2, x: 20, s: "b" },
    ]);
    const upsert = [
      { id: 1, x: undefined, s: "A" },
      { id: 3, x: undefined, s: "C" },
    ];
    await t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(upsert);
    const read = async () =>
      (await t.query().toArray())
        .map((r) => [Number(r.id), r.x === null ? null : Number(r.x), String(r.s)])
        .sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(await read()).toEqual([
      [1, 10, "A"],
      [2, 20, "b"],
      [3, null, "C"],
    ]);
    if (kind === "served") {
      await t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .memWal()
        .execute([{ id: 2, x: undefined, s: "B" }]);
      expect((await read())[1]).toEqual([2, 20, "B"]);
    }
    // A key not in the schema is refused only when it has a value (0.39 takes `extra: undefined`).
    await t.add([{ id: 4, s: "D", extra: undefined }]);
    await expect(t.add([{ id: 5, s: "E", extra: 1 }])).rejects.toThrow("Found field not in schema: extra at row 0");
    // createTable: no column for it.
    const c = await db.createTable(name(kind, "undef2"), [{ id: 1, x: undefined, s: "a" }]);
    expect((await c.schema()).fields.map((f) => f.name)).toEqual(["id", "s"]);
    // Rows giving no value at all are refused (0.39 silently adds no row), and nothing is written.
    const before = await t.countRows();
    await expect(t.add([{}])).rejects.toThrow("the rows give no values");
    await expect(t.add([{ x: undefined }, {}])).rejects.toThrow("the rows give no values");
    await expect(
      t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute([{ x: undefined }]),
    ).rejects.toThrow("the rows give no values");
    expect(await t.countRows()).toBe(before);
  });

  test("where() called twice keeps both filters, in query() and in search()", async () => {
    const db = await open();
    const t = await db.createTable(name(kind, "where"), rows);
    const q = await t.query().where("score > 1.0").where("score < 3.0").toArray();
    expect(q.map((r) => Number(r.score)).sort()).toEqual([1.2, 2.8]);
    const s = await t.search([0, 1]).where("score > 1.0").where("score < 3.0").limit(10).toArray();
    expect(s.map((r) => Number(r.id)).sort()).toEqual([1, 2]);
    // filter() is where()'s alias and ANDs too.
    expect(await t.query().filter("id > 0").filter("id < 3").toArray()).toHaveLength(2);
  });

  test("checkout() moves the handle in place; writes are refused until checkoutLatest()", async () => {
    const db = await open();
    const t = await db.createTable(name(kind, "co"), rows);
    const v1 = await t.version();
    await t.add([{ id: 9, score: 9, vector: [9, 1] }]);
    const before = t.query();
    expect(await t.checkout(v1)).toBeUndefined();
    expect(await t.version()).toBe(v1);
    expect(await t.countRows()).toBe(4);
    const refused = "table cannot be modified when a specific version is checked out";
    await expect(t.add([{ id: 10, score: 1, vector: [1, 1] }])).rejects.toThrow(refused);
    await expect(t.delete("id = 1")).rejects.toThrow(refused);
    await expect(t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().execute([rows[0]])).rejects.toThrow(refused);
    // A query built before the checkout reads what it was built on.
    expect(await before.toArray()).toHaveLength(5);
    await t.checkoutLatest();
    expect(await t.countRows()).toBe(5);
    await t.add([{ id: 10, score: 1, vector: [1, 1] }]);
    expect(await t.countRows()).toBe(6);
  });

  test("CAST(x AS FLOAT) is Float32, REAL is refused, a column from a non-null literal is non-nullable", async () => {
    const db = await open();
    const t = await db.createTable(name(kind, "types"), rows);
    const f = await t.query().select({ f: "CAST(score AS FLOAT)", d: "CAST(score AS DOUBLE)" }).toArrow();
    expect(f.schema.fields.map((x) => [x.name, String(x.type)])).toEqual([
      ["f", String(new Float32())],
      ["d", "Float64"],
    ]);
    await expect(t.query().where("CAST(score AS REAL) > 1").toArray()).rejects.toBeInstanceOf(InvalidInputError);
    await expect(t.query().where("CAST(score AS REAL) > 1").toArray()).rejects.toThrow(/REAL/);
    await t.addColumns([
      { name: "five", valueSql: "5" },
      { name: "next", valueSql: "id + 1" },
      { name: "half", valueSql: "score / 2" },
    ]);
    const s = await t.schema();
    const field = (n: string) => s.fields.find((x) => x.name === n);
    expect(field("five")?.nullable).toBe(false);
    expect(String(field("five")?.type)).toBe(String(new Int64()));
    // id is inferred as a nullable float64 from plain rows: id + 1 may be null, and division always may be.
    expect(field("next")?.nullable).toBe(field("id")?.nullable);
    expect(field("half")?.nullable).toBe(true);
  });

  test("options memwal does not honour are errors; add() calls its progress callback", async () => {
    const db = await open();
    await expect(db.createTable(name(kind, "emb"), rows, { storageOptions: { a: "b" } } as never)).rejects.toBeInstanceOf(
      NotSupportedError,
    );
    // Embedding functions are supported (embedding.test.ts); one that is not an EmbeddingFunction is refused.
    await expect(
      db.createTable(name(kind, "emb"), rows, { embeddingFunction: { function: {}, sourceColumn: "s" } } as never),
    ).rejects.toBeInstanceOf(InvalidInputError);
    expect(await db.tableNames()).not.toContain(name(kind, "emb"));
    await expect(db.createTable(name(kind, "emb"), rows, { nope: 1 } as never)).rejects.toThrow(/unknown option 'nope'/);
    const t = await db.createTable(name(kind, "prog"), rows);
    const seen: Array<Record<string, unknown>> = [];
    const added = await t.add([{ id: 7, score: 7, vector: [7, 1] }], { progress: (p) => seen.push({ ...p }) });
    // 0.39's AddResult: { version }, the version committed.
    expect(added).toEqual({ version: await t.version() });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ outputRows: 1, totalRows: 1, done: true });
    // A throwing callback does not fail the add (as 0.39): it is logged.
    const warn = jest.spyOn(console, "warn").mockImplementation(() => {});
    await t.add([{ id: 8, score: 8, vector: [8, 1] }], {
      progress: () => {
        throw new Error("boom");
      },
    });
    expect(warn).toHaveBeenCalledTimes(1);
    warn.mockRestore();
    expect(await t.countRows()).toBe(6);
    await expect(t.add(rows, { fast: true } as never)).rejects.toThrow(/unknown option 'fast'/);
  });
});

test("undefined keys: the same rows and schemas as @lancedb/lancedb 0.39 itself (bench/), call for call", async () => {
  const clientPath = path.join(__dirname, "..", "bench", "node_modules", "@lancedb", "lancedb");
  expect(fs.existsSync(clientPath)).toBe(true);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const official = require(clientPath);
  const run = async (lib: { connect: (uri: string) => Promise<memwal.Connection> }) => {
    const db = await lib.connect(tmpDir());
    const t = await db.createTable("t", [
      { id: 1, x: 10, s: "a" },
      { id: 2, x: 20, s: "b" },
    ]);
    await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([
        { id: 1, x: undefined, s: "A" },
        { id: 3, x: undefined, s: "C" },
      ]);
    await t.add([{ id: 4, s: "D", extra: undefined }]);
    const made = await db.createTable("u", [{ id: 1, x: undefined, s: "a" }]);
    const rows = (await t.query().toArray()).map((r) => JSON.stringify([Number(r.id), r.x === null ? null : Number(r.x), r.s])).sort();
    return { rows, schema: (await made.schema()).fields.map((f) => f.name) };
  };
  expect(await run(memwal)).toEqual(await run(official));
});
