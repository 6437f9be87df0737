/**
 * Plain rows with list columns, as @lancedb/lancedb 0.39 takes them: arrays of strings or booleans become
 * List<Utf8> / List<Bool> (an empty list or null says nothing of the type; a column of only those, or of mixed
 * items, is refused by name), and the rows `toArray()` answers have a `toJSON()` as 0.39's rows do.
 */
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
