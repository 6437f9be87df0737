/**
 * renameTable and schema evolution (addColumns, alterColumns, dropColumns) through the TS API on a local folder
 * table, an in-memory table and a table of the real bundled server (through our remote client): rows, versions,
 * tags and indexes go with a rename; memWal rows acknowledged before a rename or a schema change read afterwards
 * with the new name and schema; old versions stay readable; bad requests fail naming what is wrong and change
 * nothing.
 */
import { Field as ArrowField, FixedSizeList, Float16, Float32, Float64, List } from "apache-arrow";
import { InvalidInputError, NotSupportedError, type Table, TableAlreadyExistsError, TableNotFoundError } from "../lib";
import { tableKinds } from "./helpers";

const { kinds } = tableKinds();

const slug = (kind: string) => kind.replace(/\W/g, "_");

const rows = async (t: Table, cols: string[]) =>
  (await t.query().select(cols).toArray())
    .map((r) => cols.map((c) => (typeof r[c] === "bigint" ? Number(r[c]) : r[c])))
    .sort((a, b) => Number(a[0]) - Number(b[0]));

const upsert = (t: Table, served: boolean, data: Array<Record<string, unknown>>) => {
  const b = t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll();
  return (served ? b.memWal() : b).execute(data);
};

describe.each(kinds)("renameTable on a %s table", (kind, open) => {
  test("rows, versions and tags move; the old name is free; bad renames change nothing", async () => {
    const db = await open();
    const [a, b, c] = ["a", "b", "c"].map((x) => `rn_${x}_${slug(kind)}`);
    const t = await db.createTable(a, [
      { id: 1, v: 10 },
      { id: 2, v: 20 },
    ]);
    await t.tags().then((tags) => tags.create("first", 1));
    await upsert(t, kind === "served", [{ id: 3, v: 30 }]);
    const versions = (await t.listVersions()).length;
    await db.createTable(c, [{ id: 9, v: 90 }]);

    await expect(db.renameTable(a, c)).rejects.toThrow(TableAlreadyExistsError);
    await expect(db.renameTable(`rn_none_${slug(kind)}`, b)).rejects.toThrow(TableNotFoundError);
    await expect(db.renameTable(a, "bad/name")).rejects.toThrow(InvalidInputError);
    // A move to another namespace is refused: locally as NotSupported; a served table's refusal comes back as the
    // server's 400, which a LanceDB client reads as InvalidInput, naming what is not supported.
    await expect(db.renameTable(a, b, { newNamespacePath: ["ns"] })).rejects.toThrow(
      kind === "served" ? InvalidInputError : NotSupportedError,
    );
    await expect(db.renameTable(a, b, { newNamespacePath: ["ns"] })).rejects.toThrow(/not supported/);
    expect(await rows(t, ["id", "v"])).toEqual([
      [1, 10],
      [2, 20],
      [3, 30],
    ]);

    await db.renameTable(a, b);
    const names = await db.tableNames();
    expect(names).toContain(b);
    expect(names).not.toContain(a);
    await expect(db.openTable(a)).rejects.toThrow(TableNotFoundError);
    await expect(t.countRows()).rejects.toThrow(TableNotFoundError);
    const moved = await db.openTable(b);
    expect(await rows(moved, ["id", "v"])).toEqual([
      [1, 10],
      [2, 20],
      [3, 30],
    ]);
    // The served table merged its buffered rows first: one more version.
    expect((await moved.listVersions()).length).toBe(versions + (kind === "served" ? 1 : 0));
    expect(await (await moved.tags()).getVersion("first")).toBe(1);
    await moved.checkout("first");
    expect(await moved.countRows()).toBe(2);
    await moved.checkoutLatest();
    await upsert(moved, kind === "served", [{ id: 4, v: 40 }]);
    expect(await moved.countRows()).toBe(4);

    // The old name can be used again, and starts empty of the moved rows.
    const again = await db.createTable(a, [{ id: 7, v: 70 }]);
    expect(await rows(again, ["id", "v"])).toEqual([[7, 70]]);
    expect(await (await db.openTable(c)).countRows()).toBe(1);
  });
});

describe.each(kinds)("schema evolution on a %s table", (kind, open) => {
  test("add, alter and drop columns keep rows, indexes and old versions; bad changes change nothing", async () => {
    const { Field, Float32 } = await import("apache-arrow");
    const served = kind === "served";
    const db = await open();
    const t = await db.createTable(
      `ev_${slug(kind)}`,
      [1, 2, 3, 4, 5].map((i) => ({ id: i, v: i * 10, s: `s${i}` })),
    );
    await t.createIndex("id");
    await upsert(t, served, [{ id: 6, v: 60, s: "s6" }]);
    const v0 = await t.version();

    await t.addColumns([{ name: "w", valueSql: "CAST(v * 2 + id AS BIGINT)" }]);
    await t.addColumns(new Field("z", new Float32(), true));
    expect(await rows(t, ["id", "w", "z"])).toEqual([1, 2, 3, 4, 5, 6].map((i) => [i, i * 21, null]));
    // Writes after the change carry the new columns (buffered rows included).
    await upsert(t, served, [{ id: 7, v: 70, s: "s7", w: 1, z: 0.5 }]);
    expect(await rows(t, ["id", "z"])).toContainEqual([7, 0.5]);

    await t.alterColumns([
      { path: "v", rename: "v2" },
      { path: "w", dataType: "int32" },
    ]);
    const schema = await t.schema();
    expect(schema.fields.map((f) => f.name)).toEqual(["id", "v2", "s", "w", "z"]);
    expect(String(schema.fields[3].type)).toBe("Int32");
    expect(await rows(t, ["id", "v2", "w"])).toEqual([...[1, 2, 3, 4, 5, 6].map((i) => [i, i * 10, i * 21]), [7, 70, 1]]);
    expect(await t.countRows("v2 >= 30 AND id < 6")).toBe(3);
    expect((await t.listIndices()).map((i) => i.columns)).toEqual([["id"]]);
    expect(await t.countRows("id = 3")).toBe(1);

    // A cast that does not fit names the row and value, and changes nothing.
    await t.add([{ id: 8, v2: 80, s: "s8", w: 300, z: 1 }]);
    const before = await t.version();
    const e = await t.alterColumns([{ path: "w", dataType: "int8" }]).catch((x) => x);
    expect(e).toBeInstanceOf(InvalidInputError);
    expect(String(e.message)).toMatch(/300.*_rowid/);
    expect(await t.version()).toBe(before);

    await t.dropColumns(["s"]);
    expect((await t.schema()).fields.map((f) => f.name)).toEqual(["id", "v2", "w", "z"]);
    await expect(t.query().select(["s"]).toArray()).rejects.toThrow(InvalidInputError);
    await expect(upsert(t, served, [{ id: 9, v2: 9, s: "s9" }])).rejects.toThrow(InvalidInputError);
    expect(await t.countRows()).toBe(8);

    // Old versions read as they were.
    await t.checkout(v0);
    expect((await t.schema()).fields.map((f) => f.name)).toEqual(["id", "v", "s"]);
    expect(await rows(t, ["id", "v", "s"])).toContainEqual([3, 30, "s3"]);
    await t.checkoutLatest();

    // Bad requests fail naming what is wrong; the version does not move.
    const at = await t.version();
    await expect(t.dropColumns(["nope"])).rejects.toThrow(/nope/);
    await expect(t.dropColumns(["id", "v2", "w", "z"])).rejects.toThrow(InvalidInputError);
    await expect(t.addColumns([{ name: "w", valueSql: "1" }])).rejects.toThrow(/already exists/);
    await expect(t.addColumns([{ name: "q", valueSql: "nope + 1" }])).rejects.toThrow(/nope/);
    await expect(t.alterColumns([{ path: "z", nullable: false }])).rejects.toThrow(/non-nullable/);
    await expect(t.alterColumns([{ path: "id", rename: "w" }])).rejects.toThrow(InvalidInputError);
    await expect(t.alterColumns([{ path: "id", dataType: "string" }])).rejects.toThrow(/cannot change type/);
    await expect(t.addColumns({ computed: [{ name: "c", valueSql: "id" }] })).rejects.toThrow(NotSupportedError);
    expect(await t.version()).toBe(at);
  });
});

describe.each(kinds)("vector and list casts on a %s table", (kind, open) => {
  test("a float vector becomes a list of floats and back, values kept; narrowing through a list is refused", async () => {
    const db = await open();
    const t = await db.createTable(`vl_${kind.replace(/\W/g, "_")}`, [
      { id: 1, vec: [2.5, 3.25] },
      { id: 2, vec: [-1, 0.5] },
    ]);
    const list32 = new List(new ArrowField("item", new Float32(), true));
    await t.alterColumns([{ path: "vec", dataType: list32 }]);
    expect(String((await t.schema()).fields[1].type)).toBe("List<Float32>");
    await expect(t.alterColumns([{ path: "vec", dataType: new List(new ArrowField("item", new Float16(), true)) }])).rejects.toThrow(
      /cannot change type/,
    );
    await t.alterColumns([{ path: "vec", dataType: new FixedSizeList(2, new ArrowField("item", new Float64(), true)) }]);
    const rows = await t.query().select(["id", "vec"]).toArray();
    expect(rows.map((r) => [Number(r.id), Array.from(r.vec as Iterable<number>)])).toEqual([
      [1, [2.5, 3.25]],
      [2, [-1, 0.5]],
    ]);
  });
});
