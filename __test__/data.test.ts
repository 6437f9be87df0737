import {
  Table as ArrowTable,
  Field,
  Int64,
  type RecordBatch,
  Schema,
  tableFromArrays,
  tableToIPC,
  Utf8,
  vectorFromArray,
} from "apache-arrow";
import { connect } from "../lib";
import { ages, people, tmpDir } from "./helpers";

function arrowRows(): ArrowTable {
  return new ArrowTable({
    id: vectorFromArray([1n, 2n], new Int64()),
    age: vectorFromArray([10n, 20n], new Int64()),
    name: vectorFromArray(["n1", "n2"], new Utf8()),
  });
}

describe("accepted data forms give the same rows", () => {
  const forms: Array<[string, () => unknown]> = [
    ["IPC stream Buffer", () => Buffer.from(tableToIPC(arrowRows(), "stream"))],
    ["IPC file Buffer", () => Buffer.from(tableToIPC(arrowRows(), "file"))],
    ["Uint8Array", () => tableToIPC(arrowRows(), "stream")],
    ["apache-arrow Table", () => arrowRows()],
    ["RecordBatch", () => arrowRows().batches[0] as RecordBatch],
    [
      "plain objects",
      () =>
        people([
          [1, 10],
          [2, 20],
        ]),
    ],
    [
      "plain objects with number ids",
      () => [
        { id: 1, age: 10, name: "n1" },
        { id: 2, age: 20, name: "n2" },
      ],
    ],
  ];
  test.each(forms)("%s", async (_name, make) => {
    const db = await connect(tmpDir());
    const t = await db.createTable(
      "t",
      people([
        [1, 0],
        [3, 30],
      ]),
    );
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute(make() as never);
    expect([r.numUpdatedRows, r.numInsertedRows]).toEqual([1, 1]);
    expect(await ages(t)).toEqual([
      [1, 10],
      [2, 20],
      [3, 30],
    ]);
    await t.add(make() as never);
    expect(await t.countRows()).toBe(5);
  });
});

describe("table operations", () => {
  test("create, open, names, versions, checkout, delete, update, query, optimize, drop", async () => {
    const dir = tmpDir();
    const db = await connect(dir);
    const t = await db.createTable(
      "events",
      people([
        [1, 10],
        [2, 20],
        [3, 30],
      ]),
    );
    await expect(db.createTable("events", people([[9, 9]]))).rejects.toMatchObject({ code: "TableAlreadyExists" });
    expect((await db.createTable("events", people([[9, 9]]), { existOk: true })).name).toBe("events");
    expect(await db.tableNames()).toEqual(["events"]);
    expect((await t.schema()).fields.map((f) => f.name)).toEqual(["id", "age", "name"]);
    expect(await t.delete("age >= 30")).toEqual({ version: 2, numDeletedRows: 1 });
    expect(await t.update({ where: "id = 1", valuesSql: { age: "age + 1" } })).toEqual({ version: 3, rowsUpdated: 1 });
    expect(await t.update({ where: "id = 2", values: { name: "it's" } })).toEqual({ version: 4, rowsUpdated: 1 });
    const q = await t.query().where("age > 10").select(["id", "name"]).limit(5).toArrow();
    expect(q.numRows).toBe(2);
    expect(q.schema.fields.map((f) => f.name)).toEqual(["id", "name"]);
    expect((await t.query().where("id = 2").toArray())[0].name).toBe("it's");
    expect((await t.query().where("id = 99").toArrow()).numRows).toBe(0);
    const versions = await t.listVersions();
    expect(versions.map((v) => v.operation)).toEqual(["create", "delete", "update", "update"]);
    expect(versions[0].timestamp).toBeInstanceOf(Date);
    await t.checkout(1);
    expect(await t.countRows()).toBe(3);
    await expect(t.add(people([[9, 9]]))).rejects.toMatchObject({ code: "InvalidInput" });
    await t.checkoutLatest();
    const before = await ages(t);
    const s = await t.optimize();
    expect(s.compaction.fragmentsRemoved).toBeGreaterThan(1);
    expect(await ages(t)).toEqual(before);
    // Reopen from disk in a fresh connection.
    const t2 = await (await connect(dir)).openTable("events");
    expect(await ages(t2)).toEqual(before);
    await db.dropTable("events");
    await expect(db.openTable("events")).rejects.toMatchObject({ code: "TableNotFound", message: "Table 'events' was not found" });
  });

  test("memory:// and empty tables", async () => {
    const db = await connect("memory://");
    const schema = new Schema([new Field("id", new Int64(), false), new Field("v", new Utf8(), true)]);
    const t = await db.createEmptyTable("e", schema);
    expect(await t.countRows()).toBe(0);
    await t.add([{ id: 1n, v: "a" }]);
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([{ id: 1n, v: "b" }, { id: 2n }]);
    expect([r.numUpdatedRows, r.numInsertedRows]).toEqual([1, 1]);
    const rows = await t.query().toArray();
    expect(rows.map((x) => x.v)).toEqual(expect.arrayContaining(["b", null]));
    expect(tableFromArrays({ a: [1] }).numRows).toBe(1);
  });
});

describe("bad input: clear errors, nothing lost", () => {
  test.each([
    ["truncated IPC", () => Buffer.from(tableToIPC(arrowRows(), "stream")).subarray(0, 40)],
    ["random bytes", () => Buffer.from("this is not arrow at all, not even close")],
    ["empty buffer", () => Buffer.alloc(0)],
  ])("%s", async (_name, make) => {
    const db = await connect(tmpDir());
    const t = await db.createTable("t", people([[1, 10]]));
    const err = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute(make())
      .catch((e) => e);
    expect(err).toMatchObject({ code: "InvalidInput" });
    expect(err.message).toMatch(/Arrow IPC/);
    expect(await t.version()).toBe(1);
    expect(await ages(t)).toEqual([[1, 10]]);
  });

  test("schema mismatch and unknown filter column name the column", async () => {
    const db = await connect(tmpDir());
    const t = await db.createTable("t", people([[1, 10]]));
    const wrong = new ArrowTable({ id: vectorFromArray([1n], new Int64()), age: vectorFromArray(["x"], new Utf8()) });
    await expect(t.mergeInsert("id").whenMatchedUpdateAll().execute(wrong)).rejects.toMatchObject({
      code: "InvalidInput",
      message: expect.stringContaining("column 'age' has type Utf8"),
    });
    const extra = new ArrowTable({ id: vectorFromArray([1n], new Int64()), bogus: vectorFromArray([1n], new Int64()) });
    await expect(t.mergeInsert("id").whenMatchedUpdateAll().execute(extra)).rejects.toMatchObject({
      message: expect.stringContaining("column 'bogus'"),
    });
    await expect(
      t
        .mergeInsert("id")
        .whenMatchedUpdateAll({ where: "target.nope > 1" })
        .execute(people([[1, 1]])),
    ).rejects.toMatchObject({ code: "InvalidInput", message: expect.stringContaining("unknown column 'target.nope'") });
    await expect(t.countRows("nope = 1")).rejects.toMatchObject({ message: expect.stringContaining("unknown column 'nope'") });
    await expect(t.delete("id >")).rejects.toMatchObject({ message: expect.stringContaining("cannot parse filter") });
    expect(await t.version()).toBe(1);
  });

  test("bad table names", async () => {
    const db = await connect(tmpDir());
    for (const bad of ["../x", "a/b", "", ".."]) {
      await expect(db.createTable(bad, people([[1, 1]]))).rejects.toMatchObject({
        code: "InvalidInput",
        message: expect.stringContaining("invalid table name"),
      });
    }
    expect(await db.tableNames()).toEqual([]);
  });

  test("plain objects that do not fit", async () => {
    const db = await connect(tmpDir());
    const t = await db.createTable("t", people([[1, 10]]));
    await expect(t.add([{ id: 1.5 }])).rejects.toMatchObject({ code: "InvalidInput", message: expect.stringContaining("column 'id'") });
    await expect(db.createTable("n", [{ a: null }])).rejects.toMatchObject({ code: "InvalidInput" });
  });
});
