/**
 * @lancedb/lancedb 0.39's LSM API on memwal's three kinds of table. A served table's MemWAL is memwal's LSM:
 * reads include its buffered rows (useLsm(true)), compactLsm merges them. A local table has no MemWAL and refuses
 * the LSM calls by name, as 0.39 refuses them on a local table. Primary keys and write specs are checked as 0.39
 * checks them and recorded; a recorded spec routes upserts to the LSM path (a served table's MemWAL; a local table
 * commits them at once) and refuses other merge forms unless they opt out with useLsm(false).
 * Also the other 0.39 shapes this file covers: update({ column: sql }) and prewarmData.
 */
import { Field, Float64, Int16, Int64, Schema, Utf8 } from "apache-arrow";
import { InvalidInputError, NotSupportedError } from "../lib";
import { tableKinds } from "./helpers";

const { kinds } = tableKinds();
const name = (kind: string, t: string) => `${t}_${kind.replace(/\W/g, "_")}`;
const PK = "lance-schema:unenforced-primary-key:position";
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
      // useLsm(false): the base table only, without the row the MemWAL still buffers (until a flush).
      expect(ids(await t.query().useLsm(false).toArray())).toEqual([1, 2]);
      expect(ids(await t.query().where("id > 1").useLsm(false).toArray())).toEqual([2]);
      await t.flushLsm();
      expect(ids(await t.query().useLsm(false).toArray())).toEqual([1, 2, 3]);
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

  test("setUnenforcedPrimaryKey: checked as 0.39 checks it, recorded in Lance's field metadata, then fixed", async () => {
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
    const before = await t.version();
    await t.setUnenforcedPrimaryKey("id");
    expect(await t.version()).toBe(before + 1);
    const again = await db.openTable(name(kind, "pk"));
    const field = (await again.schema()).fields.find((f) => f.name === "id");
    expect(field?.metadata.get(PK)).toBe("1");
    await expect(again.setUnenforcedPrimaryKey("id")).rejects.toThrow(/already set on this table; changing it is not supported/);
    await expect(again.setUnenforcedPrimaryKey(["small"])).rejects.toThrow(InvalidInputError);
    // The key column stays: not dropped, not made nullable, not given a non-key type.
    await expect(again.dropColumns(["id"])).rejects.toThrow(/unenforced primary key and cannot be dropped/);
    await expect(again.alterColumns([{ path: "id", nullable: true }])).rejects.toThrow(/cannot be made nullable/);
    await expect(again.alterColumns([{ path: "id", dataType: "float" }])).rejects.toThrow(InvalidInputError);
    // Rows still go in and out under the recorded key; a rename keeps it.
    await again.add([{ id: 1n, name: "a", score: 1, small: 1 }]);
    await again.alterColumns([{ path: "id", rename: "key" }]);
    const renamed = (await again.schema()).fields.find((f) => f.name === "key");
    expect(renamed?.metadata.get(PK)).toBe("1");
    expect((await again.query().toArray()).map((r) => Number(r.key))).toEqual([1]);
  });

  test("a key recorded in the schema (Lance's field metadata) cannot be changed", async () => {
    const db = await open();
    const pk = new Map([[PK, "1"]]);
    const t = await db.createEmptyTable(name(kind, "haspk"), new Schema([new Field("id", new Int64(), false, pk)]));
    await expect(t.setUnenforcedPrimaryKey("id")).rejects.toThrow(/already set on this table/);
  });

  test("setLsmWriteSpec: checked as 0.39 checks it, recorded, read back and removed", async () => {
    const db = await open();
    const t = await db.createEmptyTable(name(kind, "spec"), new Schema([new Field("id", new Int64(), false)]));
    await expect(t.setLsmWriteSpec({ specType: "bogus" as never })).rejects.toThrow(/must be 'bucket', 'identity', or 'unsharded'/);
    await expect(t.setLsmWriteSpec({ specType: "bucket", column: "id" })).rejects.toThrow(/requires `numBuckets`/);
    await expect(t.setLsmWriteSpec({ specType: "bucket", column: "id", numBuckets: 0 })).rejects.toThrow(/\[1, 1024\], got 0/);
    await expect(t.setLsmWriteSpec({ specType: "identity" })).rejects.toThrow(/requires `column`/);
    await expect(t.setLsmWriteSpec({ specType: "unsharded", shards: 2 } as never)).rejects.toThrow(InvalidInputError);
    await expect(t.setLsmWriteSpec({ specType: "unsharded" })).rejects.toThrow(/no unenforced primary key/);
    expect(await t.getLsmWriteSpec()).toBeUndefined();
    await expect(t.unsetLsmWriteSpec()).rejects.toThrow(/no LSM write spec is set on this table/);
    await t.setUnenforcedPrimaryKey("id");
    await expect(t.setLsmWriteSpec({ specType: "bucket", column: "missing", numBuckets: 4 })).rejects.toThrow(/column 'missing' not found/);
    await expect(t.setLsmWriteSpec({ specType: "unsharded", maintainedIndexes: ["nope"] })).rejects.toThrow(
      /'nope' does not exist on this table; it has no indexes/,
    );
    await expect(t.setLsmWriteSpec({ specType: "unsharded", writerConfigDefaults: { max_memtable_rows: "9" } })).rejects.toThrow(
      /"max_memtable_rows" is not supported by memwal/,
    );
    await t.add([{ id: 1n }, { id: 2n }]);
    await t.createIndex("id");
    const idx = (await t.listIndices())[0].name;
    const writerConfigDefaults = { durable_write: "false" };
    await t.setLsmWriteSpec({ specType: "bucket", column: "id", numBuckets: 4, writerConfigDefaults });
    expect(await (await db.openTable(name(kind, "spec"))).getLsmWriteSpec()).toEqual({
      specType: "bucket",
      column: "id",
      numBuckets: 4,
      maintainedIndexes: [idx],
      writerConfigDefaults,
    });
    await expect(t.setLsmWriteSpec({ specType: "unsharded" })).rejects.toThrow(/already set on this table; mutation is not supported/);
    await t.unsetLsmWriteSpec();
    expect(await t.getLsmWriteSpec()).toBeUndefined();
    await expect(t.unsetLsmWriteSpec()).rejects.toThrow(/no LSM write spec is set/);
    await t.setLsmWriteSpec({ specType: "identity", column: "id", maintainedIndexes: [] });
    expect(await t.getLsmWriteSpec()).toEqual({ specType: "identity", column: "id", maintainedIndexes: [], writerConfigDefaults: {} });
    await t.unsetLsmWriteSpec();
    await t.setLsmWriteSpec({ specType: "unsharded" });
    const unsharded = await t.getLsmWriteSpec();
    expect(unsharded?.specType).toBe("unsharded");
    expect(unsharded?.column).toBeUndefined();
    expect(await t.countRows()).toBe(2);
    await expect(t.closeLsmWriters()).resolves.toBeUndefined();
  });

  test("with a write spec, upserts on the key take the LSM path, other merges are refused, useLsm(false) opts out", async () => {
    const db = await open();
    const t = await db.createEmptyTable(
      name(kind, "route"),
      new Schema([new Field("id", new Utf8(), false), new Field("value", new Float64(), true)]),
    );
    await t.add([
      { id: "a", value: 1 },
      { id: "b", value: 2 },
    ]);
    await t.setUnenforcedPrimaryKey("id");
    await t.setLsmWriteSpec({ specType: "bucket", column: "id", numBuckets: 1 });
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([
        { id: "b", value: 20 },
        { id: "c", value: 3 },
      ]);
    expect(r.numRows).toBe(2);
    const rows = async (q = t.query()) =>
      (await q.toArray()).map((x) => [String(x.id), Number(x.value)]).sort((x, y) => String(x[0]).localeCompare(String(y[0])));
    expect(await rows()).toEqual([
      ["a", 1],
      ["b", 20],
      ["c", 3],
    ]);
    if (served) {
      // On a served table the LSM path is its MemWAL: the upsert's rows are buffered there.
      const stats = await t.getLsmStats();
      expect((stats?.buckets[0].memtables ?? []).reduce((n, m) => n + m.rows, 0)).toBe(2);
      expect(await rows(t.query().useLsm(false))).toEqual([
        ["a", 1],
        ["b", 2],
      ]);
    } else {
      // A local table has no MemWAL: the upsert committed, so base-only reads see it.
      expect(await rows(t.query().useLsm(false))).toEqual(await rows(t.query().useLsm(true)));
    }
    await expect(
      t
        .mergeInsert("id")
        .whenNotMatchedInsertAll()
        .execute([{ id: "d", value: 4 }]),
    ).rejects.toThrow(/only the upsert form .* call use_lsm\(false\)/);
    await expect(
      t
        .mergeInsert("value")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute([{ id: "d", value: 4 }]),
    ).rejects.toThrow(/must match the table's unenforced primary key/);
    const std = await t
      .mergeInsert("id")
      .whenNotMatchedInsertAll()
      .useLsm(false)
      .execute([
        { id: "b", value: 99 },
        { id: "e", value: 5 },
      ]);
    expect(std.numInsertedRows).toBe(1);
    await t.unsetLsmWriteSpec();
    await t
      .mergeInsert("id")
      .whenNotMatchedInsertAll()
      .execute([{ id: "f", value: 6 }]);
    expect(await rows()).toEqual([
      ["a", 1],
      ["b", 20],
      ["c", 3],
      ["e", 5],
      ["f", 6],
    ]);
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
