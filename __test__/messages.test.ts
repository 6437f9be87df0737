/**
 * Refusals whose message text is part of @lancedb/lancedb 0.39's contract (its own tests and ported code match on
 * it): memwal's message starts with, or contains, 0.39's text, keeps its own detail, and keeps its error class.
 */
import { Field, FixedSizeList, Float32, Float64, Schema, Utf8 } from "apache-arrow";
import { connect, InvalidInputError, type Table, TimeoutError } from "../lib";
import { people, tmpDir } from "./helpers";

async function table(): Promise<Table> {
  const db = await connect(tmpDir());
  return db.createTable("t", people([[1, 10]]));
}

describe("0.39's texts for the same refusals", () => {
  test("takeRowIds argument checks", async () => {
    const t = await table();
    const refused = (ids: Array<number | bigint>) => {
      try {
        t.takeRowIds(ids);
      } catch (e) {
        expect(e).toBeInstanceOf(InvalidInputError);
        return (e as Error).message;
      }
      throw new Error("not refused");
    };
    expect(refused([1.5])).toMatch(/^Row id must be an integer \(or bigint\): takeRowIds\(rowIds\)\[0\] is 1\.5/);
    expect(refused([0, 1.1, 2])).toMatch(/^Row id must be an integer \(or bigint\): takeRowIds\(rowIds\)\[1\]/);
    expect(refused([-1])).toMatch(/^Row id cannot be negative: takeRowIds\(rowIds\)\[0\] is -1/);
    expect(refused([0, -5, 2])).toMatch(/^Row id cannot be negative: takeRowIds\(rowIds\)\[1\] is -5/);
    expect(refused([-1n])).toMatch(/^Row id cannot be negative/);
    expect(refused([Number.MAX_SAFE_INTEGER + 1])).toMatch(/^Row id is too large for number; use bigint instead/);
    expect(refused([2n ** 64n])).toMatch(/^Row id is too large to fit in u64/);
    // Still accepted: a safe number, a bigint up to 2^64-1.
    expect(await t.takeRowIds([0, 2n ** 64n - 1n]).toArray()).toHaveLength(1);
  });

  test("add: a non-nullable column left out, or given nulls", async () => {
    const db = await connect(tmpDir());
    const schema = new Schema([new Field("x", new Float64(), false), new Field("id", new Utf8(), false)]);
    const t = await db.createEmptyTable("n", schema);
    const missing = t.add([{ id: "a" }]);
    await expect(missing).rejects.toThrow(InvalidInputError);
    await expect(missing).rejects.toThrow(
      "Append with different schema: column 'x' is missing from the data and is not nullable in the table",
    );
    const nulls = t.add([{ x: null, id: "b" }]);
    await expect(nulls).rejects.toThrow(InvalidInputError);
    await expect(nulls).rejects.toThrow("Column 'x' is declared as non-nullable but contains null values (1 in the data)");
    expect(await t.countRows()).toBe(0);
  });

  test("mergeInsert timeout", async () => {
    const t = await table();
    const run = t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute(people([[1, 1]]), { timeoutMs: 0 });
    await expect(run).rejects.toThrow(TimeoutError);
    await expect(run).rejects.toThrow(/^merge insert timed out after 0 ms; nothing was committed$/);
  });

  test("createIndex without replace on an indexed column", async () => {
    const t = await table();
    await t.createIndex("id");
    const again = t.createIndex("id", { replace: false });
    await expect(again).rejects.toThrow(InvalidInputError);
    await expect(again).rejects.toThrow("Index 'id_idx' already exists on column 'id' of table 't': drop it first or pass replace: true");
  });

  test("query vector dimension; no vector column", async () => {
    const db = await connect(tmpDir());
    const vec = new Field("vec", new Float32(), true);
    const schema = new Schema([new Field("id", new Float64(), true), new Field("v", new FixedSizeList(4, vec), true)]);
    const t = await db.createEmptyTable("v", schema);
    await t.add([{ id: 1, v: [1, 2, 3, 4] }]);
    const dim = t.query().nearestTo([1, 2]).column("v").toArray();
    await expect(dim).rejects.toThrow(InvalidInputError);
    await expect(dim).rejects.toThrow(/^Invalid input, query dim\(2\) doesn't match the column v vector dim\(4\): /);
    await expect(t.search([1, 2]).toArray()).rejects.toThrow(/^No vector column of dimension 2 to search/);
    const plain = await table();
    const none = plain.query().nearestTo([0, 1]).limit(1).toArray();
    await expect(none).rejects.toThrow(InvalidInputError);
    await expect(none).rejects.toThrow(/^No vector column of dimension 2 to search \(the table has no vector column/);
    await expect(plain.search([0, 1]).explainPlan()).rejects.toThrow(/^No vector column/);
  });

  test("restore without checkout", async () => {
    const t = await table();
    await expect(t.restore()).rejects.toThrow(InvalidInputError);
    await expect(t.restore()).rejects.toThrow("restore needs a version: run checkout before running restore, or pass the version");
  });
});
