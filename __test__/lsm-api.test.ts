/**
 * @lancedb/lancedb 0.39's LSM API on memwal's three kinds of table. A served table's MemWAL is memwal's LSM:
 * reads include its buffered rows (useLsm(true)), compactLsm merges them. A local table has no MemWAL and refuses
 * the LSM calls by name, as 0.39 refuses them on a local table. Primary keys and write specs are checked as 0.39
 * checks them, then refused as not supported (memwal records neither); unset/get answer for a table without one.
 * Also the other 0.39 shapes this file covers: update({ column: sql }) and prewarmData.
 */
import { Field, Float64, Int16, Int64, Schema, Utf8 } from "apache-arrow";
import { InvalidInputError, NotSupportedError } from "../lib";
import { tableKinds } from "./helpers";

const { kinds } = tableKinds();
const name = (kind: string, t: string) => `${t}_${kind.replace(/\W/g, "_")}`;
const ids = (rows: Array<Record<string, unknown>>) => rows.map((r) => Number(r.id)).sort((a, b) => a - b);

describe.each(kinds)("the LSM API on a %s table", (kind, open) => {
  const served = kind === "served";

  test("getLsmStats, flushLsm, compactLsm, checkpointLsm: a served table's MemWAL, refused by name on a local one", async () => {
    const db = await open();
    const t = await db.createTable(name(kind, "stats"), [{ id: 1, v: 1 }]);
    if (!served) {
      await expect(t.getLsmStats()).rejects.toThrow(/get_lsm_stats is not supported on this table type/);
      await expect(t.flushLsm()).rejects.toThrow(/flush_lsm is not supported on this table type/);
      await expect(t.compactLsm()).rejects.toThrow(/compact_lsm is not supported on this table type/);
      await expect(t.checkpointLsm()).rejects.toThrow(NotSupportedError);
      return;
    }
    await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .useLsm(true)
      .execute([{ id: 2, v: 2 }]);
    const buffered = async () => ((await t.getLsmStats())?.buckets[0].memtables ?? []).reduce((n, m) => n + m.rows, 0);
    expect(await buffered()).toBe(1);
    await t.compactLsm();
    expect(await buffered()).toBe(0);
    expect(ids(await t.query().toArray())).toEqual([1, 2]);
  });

  test("query().useLsm: what the table's reads are is accepted, the other refused", async () => {
    const db = await open();
    const t = await db.createTable(name(kind, "read"), [
      { id: 1, v: 1 },
      { id: 2, v: 2 },
    ]);
    if (served) {
      await t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .useLsm(true)
        .execute([{ id: 3, v: 3 }]);
      expect(ids(await t.query().useLsm(true).toArray())).toEqual([1, 2, 3]);
      await expect(t.query().useLsm(false).toArray()).rejects.toThrow(/useLsm\(false\) is not supported/);
      return;
    }
    expect(ids(await t.query().useLsm(false).toArray())).toEqual([1, 2]);
    expect(ids(await t.query().where("id > 1").useLsm(false).toArray())).toEqual([2]);
    expect(ids(await t.takeRowIds([0]).useLsm(false).toArray())).toEqual([1]);
    await expect(t.query().useLsm(true).toArray()).rejects.toThrow(/use_lsm\(true\) was set but the table has no MemWAL/);
    await expect(t.vectorSearch([1]).useLsm(true).toArray()).rejects.toThrow(NotSupportedError);
    expect(() => t.query().useLsm("yes" as never)).toThrow(InvalidInputError);
  });

  test("validateSingleShard is accepted (one bucket: every row routes to it) and checked", async () => {
    const db = await open();
    const t = await db.createTable(name(kind, "shard"), [{ id: 1, v: 1 }]);
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .validateSingleShard(false)
      .execute([{ id: 2, v: 2 }]);
    expect(r.numRows).toBe(1);
    expect(await t.countRows()).toBe(2);
    expect(() => t.mergeInsert("id").validateSingleShard(1 as never)).toThrow(InvalidInputError);
  });

  test("setUnenforcedPrimaryKey: checked as 0.39 checks it, then refused as not supported", async () => {
    const db = await open();
    const schema = new Schema([
      new Field("id", new Int64(), false),
      new Field("name", new Utf8(), true),
      new Field("score", new Float64(), false),
      new Field("small", new Int16(), false),
    ]);
    const t = await db.createEmptyTable(name(kind, "pk"), schema);
    await expect(t.setUnenforcedPrimaryKey(["id", "name"])).rejects.toThrow(/compound primary keys are not supported, got 2/);
    await expect(t.setUnenforcedPrimaryKey([])).rejects.toThrow(/a column is required/);
    await expect(t.setUnenforcedPrimaryKey("nope")).rejects.toThrow(/column 'nope' not found/);
    await expect(t.setUnenforcedPrimaryKey("score")).rejects.toThrow(/not supported as a primary key/);
    await expect(t.setUnenforcedPrimaryKey("small")).rejects.toThrow(InvalidInputError);
    await expect(t.setUnenforcedPrimaryKey("name")).rejects.toThrow(/must not be nullable/);
    await expect(t.setUnenforcedPrimaryKey("id")).rejects.toThrow(NotSupportedError);
    await expect(t.setUnenforcedPrimaryKey(["id"])).rejects.toThrow(/setUnenforcedPrimaryKey is not supported by memwal/);
  });

  test("a key recorded in the schema (Lance's field metadata) cannot be changed", async () => {
    const db = await open();
    const pk = new Map([["lance-schema:unenforced-primary-key:position", "1"]]);
    const t = await db.createEmptyTable(name(kind, "haspk"), new Schema([new Field("id", new Int64(), false, pk)]));
    await expect(t.setUnenforcedPrimaryKey("id")).rejects.toThrow(/already set on this table/);
  });

  test("setLsmWriteSpec: checked as 0.39 checks it, then refused; unset, get and closeLsmWriters answer for no spec", async () => {
    const db = await open();
    const t = await db.createEmptyTable(name(kind, "spec"), new Schema([new Field("id", new Int64(), false)]));
    await expect(t.setLsmWriteSpec({ specType: "bogus" as never })).rejects.toThrow(/must be 'bucket', 'identity', or 'unsharded'/);
    await expect(t.setLsmWriteSpec({ specType: "bucket", column: "id" })).rejects.toThrow(/requires `numBuckets`/);
    await expect(t.setLsmWriteSpec({ specType: "bucket", column: "id", numBuckets: 0 })).rejects.toThrow(/\[1, 1024\], got 0/);
    await expect(t.setLsmWriteSpec({ specType: "identity" })).rejects.toThrow(/requires `column`/);
    await expect(t.setLsmWriteSpec({ specType: "bucket", column: "missing", numBuckets: 4 })).rejects.toThrow(/column 'missing' not found/);
    await expect(t.setLsmWriteSpec({ specType: "unsharded", shards: 2 } as never)).rejects.toThrow(InvalidInputError);
    await expect(t.setLsmWriteSpec({ specType: "unsharded" })).rejects.toThrow(/setLsmWriteSpec is not supported by memwal/);
    await expect(t.setLsmWriteSpec({ specType: "bucket", column: "id", numBuckets: 4 })).rejects.toThrow(NotSupportedError);
    expect(await t.getLsmWriteSpec()).toBeUndefined();
    await expect(t.unsetLsmWriteSpec()).rejects.toThrow(/no LSM write spec is set on this table/);
    await expect(t.closeLsmWriters()).resolves.toBeUndefined();
  });

  test("update takes { column: sql } and a Map, with the filter as a second argument", async () => {
    const db = await open();
    const t = await db.createTable(name(kind, "upd"), [
      { id: 1, v: 1 },
      { id: 2, v: 2 },
      { id: 3, v: 3 },
    ]);
    const r = await t.update({ v: "v * 10" }, { where: "id >= 2" });
    expect(r.rowsUpdated).toBe(2);
    await t.update(new Map([["v", "v + 1"]]), { where: "id = 1" });
    await t.update({ values: { v: 0 } }, { where: "id = 3" });
    const rows = (await t.query().toArray()).map((x) => [Number(x.id), Number(x.v)]).sort((a, b) => a[0] - b[0]);
    expect(rows).toEqual([
      [1, 2],
      [2, 20],
      [3, 0],
    ]);
    await expect(t.update({ v: 5 } as never)).rejects.toThrow(InvalidInputError);
    await expect(t.update({ values: { v: 1 }, where: "id = 1" }, { where: "id = 2" })).rejects.toThrow(/give `where` once/);
    await expect(t.update({ v: "1" }, { filter: "id = 1" } as never)).rejects.toThrow(InvalidInputError);
  });

  test("prewarmData is refused by name", async () => {
    const db = await open();
    const t = await db.createTable(name(kind, "warm"), [{ id: 1 }]);
    const text = served
      ? /prewarmData is not supported by memwal's remote client/
      : "prewarm_data is currently only supported on remote tables";
    await expect(t.prewarmData()).rejects.toThrow(text);
    await expect(t.prewarmData(["id"])).rejects.toThrow(NotSupportedError);
  });
});
