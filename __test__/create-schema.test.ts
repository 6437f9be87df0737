/**
 * `createTable(name, rows, { schema })` as @lancedb/lancedb 0.39 makes it (checked side by side with 0.39.0 on a
 * local table): the schema's nullability and metadata are the table's, its columns the rows have are kept in the
 * schema's order, a row key the schema lacks or a null in a non-nullable column is refused by name and creates
 * nothing. Before, the schema only typed the columns: every column came out nullable (a silent difference that
 * also made `setUnenforcedPrimaryKey` refuse the key column).
 */

import { Field, Float64, Int32, Schema, Utf8 } from "apache-arrow";
import { tableKinds } from "./helpers";

const { kinds } = tableKinds();

const schema = new Schema([
  new Field("id", new Utf8(), false, new Map([["doc", "the key"]])),
  new Field("v", new Float64(), true),
  new Field("w", new Int32(), false),
]);

const shape = async (t: { schema(): Promise<Schema> }) =>
  (await t.schema()).fields.map((f) => [f.name, String(f.type), f.nullable, f.metadata.get("doc") ?? null]);

describe.each(kinds)("createTable with rows and a schema on a %s table", (kind, open) => {
  const name = (base: string) => `${base}_${kind.replace(/ /g, "_")}`;

  test("the schema's nullability, metadata and order are the table's; the columns the rows lack are left out", async () => {
    const db = await open();
    const t = await db.createTable(name("full"), [{ w: 3, v: 2, id: "a" }], { schema, mode: "overwrite" });
    expect(await shape(t)).toEqual([
      ["id", "Utf8", false, "the key"],
      ["v", "Float64", true, null],
      ["w", "Int32", false, null],
    ]);
    expect((await t.query().toArray()).map((r) => [r.id, r.v, r.w])).toEqual([["a", 2, 3]]);
    const part = await db.createTable(name("part"), [{ id: "a", w: 1 }], { schema, mode: "overwrite" });
    expect(await shape(part)).toEqual([
      ["id", "Utf8", false, "the key"],
      ["w", "Int32", false, null],
    ]);
    // The key column is non-nullable, so it can be the unenforced primary key.
    await t.setUnenforcedPrimaryKey("id");
  });

  test("a key the schema lacks and a null in a non-nullable column are refused with 0.39's texts; nothing is created", async () => {
    const db = await open();
    const before = await db.tableNames();
    await expect(db.createTable(name("extra"), [{ id: "a", v: 1, w: 1, extra: 2 }], { schema })).rejects.toThrow(
      "Found field not in schema: extra at row 0",
    );
    await expect(
      db.createTable(
        name("nulls"),
        [
          { id: "a", v: 1, w: 1 },
          { id: "b", v: 1, w: null },
          { id: "c", v: 1 },
        ],
        { schema },
      ),
    ).rejects.toThrow("Column 'w' is declared as non-nullable but contains null values (2 in the data)");
    expect(await db.tableNames()).toEqual(before);
  });

  test("add and mergeInsert rows are read with the table's schema: an unknown key is refused by name", async () => {
    const db = await open();
    const t = await db.createTable(name("adds"), [{ id: "a", v: 1, w: 1 }], { schema, mode: "overwrite" });
    await expect(t.add([{ id: "b", v: 1, w: 1, nope: 1 }])).rejects.toThrow("Found field not in schema: nope at row 0");
    await expect(t.add([{ id: "b", v: 1, w: null }])).rejects.toThrow(
      "Column 'w' is declared as non-nullable but contains null values (1 in the data)",
    );
    await expect(
      t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute([{ id: "c", v: 1, w: 1, nope: 1 }]),
    ).rejects.toThrow("Found field not in schema: nope at row 0");
    expect(await t.countRows()).toBe(1);
    await t.add([{ id: "b", w: 2 }]);
    expect((await t.query().toArray()).map((r) => [r.id, r.v, r.w]).sort()).toEqual([
      ["a", 1, 1],
      ["b", null, 2],
    ]);
  });
});
