import { connect, type Table } from "../lib";
import { ages, people, tmpDir } from "./helpers";

async function table(rows: Array<[number, number]>): Promise<Table> {
  const db = await connect(tmpDir());
  return db.createTable("t", people(rows));
}

describe("merge insert on a folder table", () => {
  test("upsert updates and inserts, counts exact", async () => {
    const t = await table([
      [1, 10],
      [2, 20],
      [3, 30],
    ]);
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute(
        people([
          [2, 21],
          [4, 40],
        ]),
      );
    expect(r).toEqual({ version: 2, numInsertedRows: 1, numUpdatedRows: 1, numDeletedRows: 0, numAttempts: 1, numRows: 2 });
    expect(await ages(t)).toEqual([
      [1, 10],
      [2, 21],
      [3, 30],
      [4, 40],
    ]);
    expect(await t.countRows()).toBe(4);
  });

  test("insert-only leaves matched rows alone", async () => {
    const t = await table([[1, 10]]);
    const r = await t
      .mergeInsert("id")
      .whenNotMatchedInsertAll()
      .execute(
        people([
          [1, 99],
          [2, 20],
        ]),
      );
    expect([r.numInsertedRows, r.numUpdatedRows]).toEqual([1, 0]);
    expect(await ages(t)).toEqual([
      [1, 10],
      [2, 20],
    ]);
  });

  test("conditional update with source and target columns", async () => {
    const t = await table([
      [1, 10],
      [2, 0],
      [3, 30],
    ]);
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll({ where: "target.age > 0 AND source.age > target.age" })
      .execute(
        people([
          [1, 15],
          [2, 25],
          [3, 5],
        ]),
      );
    expect(r.numUpdatedRows).toBe(1);
    expect(await ages(t)).toEqual([
      [1, 15],
      [2, 0],
      [3, 30],
    ]);
  });

  test("delete by source with and without a filter", async () => {
    const t = await table([
      [1, 10],
      [2, 20],
      [3, 30],
      [4, 40],
    ]);
    let r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedBySourceDelete({ where: "id < 3" })
      .execute(people([[2, 22]]));
    expect([r.numUpdatedRows, r.numDeletedRows]).toEqual([1, 1]);
    expect(await ages(t)).toEqual([
      [2, 22],
      [3, 30],
      [4, 40],
    ]);
    r = await t
      .mergeInsert("id")
      .whenNotMatchedBySourceDelete()
      .execute(people([[3, 0]]));
    expect(r.numDeletedRows).toBe(2);
    expect(await ages(t)).toEqual([[3, 30]]);
  });

  test("composite key", async () => {
    const db = await connect(tmpDir());
    const t = await db.createTable("c", [
      { a: 1n, b: "x", v: 1n },
      { a: 1n, b: "y", v: 2n },
    ]);
    const r = await t
      .mergeInsert(["a", "b"])
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([
        { a: 1n, b: "y", v: 20n },
        { a: 2n, b: "x", v: 30n },
      ]);
    expect([r.numInsertedRows, r.numUpdatedRows]).toEqual([1, 1]);
    const rows = (await t.query().toArray()).map((x) => `${x.a}${x.b}=${x.v}`).sort();
    expect(rows).toEqual(["1x=1", "1y=20", "2x=30"]);
  });

  test("duplicate source keys are rejected naming the key", async () => {
    const t = await table([[1, 10]]);
    await expect(
      t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute(
          people([
            [1, 1],
            [1, 2],
          ]),
        ),
    ).rejects.toMatchObject({
      code: "InvalidInput",
      message: "Ambiguous merge inserts are prohibited: multiple source rows match the same target row on (id = 1)",
    });
    expect(await t.version()).toBe(1);
  });

  test("no clause is an error", async () => {
    const t = await table([[1, 10]]);
    await expect(t.mergeInsert("id").execute(people([[1, 1]]))).rejects.toMatchObject({
      code: "InvalidInput",
      message: "The merge insert job is not configured to change the data in any way",
    });
  });
});

describe("MemWAL validation on a native table", () => {
  const cases: Array<[string, (b: ReturnType<Table["mergeInsert"]>) => unknown, string, string]> = [
    ["no update", (b) => b.whenNotMatchedInsertAll(), "InvalidInput", "MemWAL requires when_matched_update_all() to be set"],
    [
      "filtered update",
      (b) => b.whenMatchedUpdateAll({ where: "target.age > 0" }).whenNotMatchedInsertAll(),
      "InvalidInput",
      "MemWAL does not support conditional when_matched_update_all (no filter allowed)",
    ],
    ["no insert", (b) => b.whenMatchedUpdateAll(), "InvalidInput", "MemWAL requires when_not_matched_insert_all() to be set"],
    [
      "delete by source",
      (b) => b.whenMatchedUpdateAll().whenNotMatchedInsertAll().whenNotMatchedBySourceDelete(),
      "InvalidInput",
      "MemWAL does not support when_not_matched_by_source_delete()",
    ],
    [
      "valid upsert",
      (b) => b.whenMatchedUpdateAll().whenNotMatchedInsertAll(),
      "NotSupported",
      "MemWAL is not supported for native (local) tables. MemWAL is only available for remote (LanceDB Cloud) tables.",
    ],
  ];
  test.each(cases)("%s", async (_name, setup, code, message) => {
    const t = await table([[1, 10]]);
    const b = t.mergeInsert("id");
    setup(b);
    const err = await b
      .memWal()
      .execute(
        people([
          [1, 11],
          [2, 2],
        ]),
      )
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).toMatchObject({ code, message });
    expect(await t.version()).toBe(1);
    expect(await ages(t)).toEqual([[1, 10]]);
  });

  test("memWal(false) runs the ordinary merge", async () => {
    const t = await table([[1, 10]]);
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .memWal(false)
      .execute(people([[1, 11]]));
    expect(r.numUpdatedRows).toBe(1);
  });
});
