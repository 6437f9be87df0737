/**
 * Plain rows with list columns, as @lancedb/lancedb 0.39 takes them: arrays of strings or booleans become
 * List<Utf8> / List<Bool> (an empty list or null says nothing of the type; a column of only those, or of mixed
 * items, is refused by name), and the rows `toArray()` answers have a `toJSON()` as 0.39's rows do.
 */
import { Field, FixedSizeList, Float32, Int32, Schema } from "apache-arrow";
import { connect, InvalidInputError } from "../lib";
import { tmpDir } from "./helpers";

const fieldsOf = async (t: import("../lib").Table) => (await t.schema()).fields.map((f) => `${f.name}: ${String(f.type)}`);
const plain = (v: unknown) => (v === null || v === undefined ? v : Array.from(v as Iterable<unknown>));

describe("list columns inferred from plain rows", () => {
  test("arrays of strings are List<Utf8>, read back as written (empty lists, null lists and null items too)", async () => {
    const db = await connect(tmpDir());
    const rows = [{ tags: [] }, { tags: ["lance", "db"] }, { tags: null }, { tags: ["x", null] }];
    const t = await db.createTable("t", rows);
    expect(await fieldsOf(t)).toEqual(["tags: List<Utf8>"]);
    expect((await t.query().toArray()).map((r) => plain(r.tags))).toEqual([[], ["lance", "db"], null, ["x", null]]);
    await t.add([{ tags: ["more"] }]);
    expect(await t.countRows()).toBe(5);
  });

  test("arrays of booleans are List<Bool>; numbers stay vectors", async () => {
    const db = await connect(tmpDir());
    const t = await db.createTable("t", [{ flags: [true, false], vector: [1, 2] }]);
    expect(await fieldsOf(t)).toEqual(["flags: List<Bool>", "vector: FixedSizeList[2]<Float32>"]);
  });

  test("a column of only empty lists, or of mixed items, is refused by name", async () => {
    const db = await connect(tmpDir());
    await expect(db.createTable("a", [{ tags: [] }])).rejects.toThrow(/column 'tags': it holds only empty lists/);
    await expect(db.createTable("b", [{ tags: ["a"] }, { tags: [1] }])).rejects.toThrow(/mix string and number items/);
    await expect(db.createTable("c", [{ xs: [{ a: 1 }] }])).rejects.toThrow(InvalidInputError);
  });
});

describe("rows answered by toArray", () => {
  test("have a toJSON giving the same plain values, not listed among their keys", async () => {
    const db = await connect(tmpDir());
    const t = await db.createTable("t", [{ id: 1, name: "a" }]);
    const [row] = await t.query().toArray();
    expect(Object.keys(row)).toEqual(["id", "name"]);
    expect((row as { toJSON(): unknown }).toJSON()).toEqual({ id: 1, name: "a" });
    expect(row).toEqual({ id: 1, name: "a" });
  });
});

describe("vectors that are null in some rows", () => {
  test("a null vector after a real one, and undefined, omitted and null vectors against a schema, are null rows", async () => {
    const db = await connect("memory://");
    const t = await db.createTable("t", [{ vector: [1, 2, 3] }, { vector: null }, { vector: [4, 5, 6] }]);
    expect((await t.query().toArray()).map((r) => plain(r.vector))).toEqual([[1, 2, 3], null, [4, 5, 6]]);

    const schema = new Schema([
      new Field("id", new Int32(), true),
      new Field("vector", new FixedSizeList(4, new Field("item", new Float32(), true)), true),
    ]);
    const e = await db.createEmptyTable("e", schema);
    await e.add([{ id: 0, vector: undefined }]);
    await e.add([{ id: 1 }]);
    await e.add([
      { id: 2, vector: null },
      { id: 3, vector: [0.5, 0.5, 0.5, 0.5] },
    ]);
    const rows = (await e.query().toArray()).map((r) => [r.id, plain(r.vector)]).sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(rows).toEqual([
      [0, null],
      [1, null],
      [2, null],
      [3, [0.5, 0.5, 0.5, 0.5]],
    ]);
    await expect(e.add([{ id: 4, vector: [1, 2] }])).rejects.toThrow(/needs 4 values per row, got 2/);
  });
});
