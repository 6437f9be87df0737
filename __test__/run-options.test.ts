/**
 * Two things code written for @lancedb/lancedb 0.39 reads or passes that memwal ignored: the options of
 * `toArrow` / `toArray` (`timeoutMs`, `maxBatchLength`: were silently dropped) and the read consistency interval
 * `display()` shows (`None` when the caller gave none, Rust's duration text otherwise).
 */
import { connect, Index, InvalidInputError, TimeoutError } from "../lib";
import { tableKinds, tmpDir } from "./helpers";

const { kinds } = tableKinds();

const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ id: i, text: `row ${i}`, vector: [i, 1] }));

describe.each(kinds)("%s: query execution options", (_kind, open) => {
  test("timeoutMs: 0 refuses every kind of query with 0.39's text; a generous deadline answers", async () => {
    const db = await open();
    const t = await db.createTable(`exec_timeout_${Date.now()}`, rows(20));
    await t.createIndex("text", { config: Index.fts() });
    const queries = [
      () => t.query().where("id > 3"),
      () => t.query().nearestTo([0, 0]),
      () => t.search("row", "fts"),
      () => t.query().nearestTo([0, 0]).fullTextSearch("row"),
    ];
    for (const q of queries) {
      await expect(q().toArray({ timeoutMs: 0 })).rejects.toThrow(TimeoutError);
      await expect(q().toArrow({ timeoutMs: 0 })).rejects.toThrow("Query timeout after 0 ms");
      expect((await q().toArray({ timeoutMs: 60_000 })).length).toBeGreaterThan(0);
    }
  });

  test("maxBatchLength cuts the answer into batches of at most that many rows, same rows in order", async () => {
    const db = await open();
    const t = await db.createTable(`exec_batches_${Date.now()}`, rows(10));
    const whole = await t.query().toArrow();
    const cut = await t.query().toArrow({ maxBatchLength: 3 });
    expect(cut.batches.map((b) => b.numRows)).toEqual([3, 3, 3, 1]);
    expect(cut.toArray().map((r) => r.id)).toEqual(whole.toArray().map((r) => r.id));
    expect((await t.query().limit(4).toArray({ maxBatchLength: 1 })).length).toBe(4);
  });

  test("options are checked by name", async () => {
    const db = await open();
    const t = await db.createTable(`exec_checks_${Date.now()}`, rows(2));
    await expect(t.query().toArray({ maxBatchLength: 0 })).rejects.toThrow(InvalidInputError);
    await expect(t.query().toArray({ timeoutMs: -1 })).rejects.toThrow(/timeoutMs/);
    await expect(t.query().toArrow({ batchSize: 3 } as never)).rejects.toThrow(/unknown option 'batchSize'/);
  });
});

describe("display() shows the read consistency interval as 0.39 does", () => {
  test("None when none was given, on a folder and in memory, connection and tables", async () => {
    const dir = tmpDir();
    const db = await connect(dir);
    expect(db.display()).toBe(`ListingDatabase(uri=${dir}, read_consistency_interval=None)`);
    const t = await db.createTable("t", rows(1));
    expect(t.display()).toBe(`NativeTable(t, uri=${dir}/t, read_consistency_interval=None)`);
    expect((await connect("memory://")).display()).toBe("ListingDatabase(uri=memory://, read_consistency_interval=None)");
  });

  test.each([
    [5, "5s"],
    [0, "0ns"],
    [1.5, "1.5s"],
    [0.5, "500ms"],
    [0.0025, "2.5ms"],
  ])("readConsistencyInterval %p shows as %s", async (seconds, text) => {
    const dir = tmpDir();
    const db = await connect(dir, { readConsistencyInterval: seconds });
    expect(db.display()).toBe(`ListingDatabase(uri=${dir}, read_consistency_interval=${text})`);
    expect((await db.createTable("t", rows(1))).display()).toContain(`read_consistency_interval=${text})`);
  });
});
