/**
 * Compatibility: the official @lancedb/lancedb 0.39.0 Node client, pointed at
 * our server with hostOverride, creates, reads, merges and deletes.
 * The client is installed in bench/ (scripts/test.sh runs `npm install --prefix bench`
 * and stops if that fails); a missing client fails this suite, it never skips.
 */

import * as fs from "node:fs";
import * as path from "node:path";
import * as arrow from "apache-arrow";
import * as ours from "../lib";
import { connect, type Server, serve } from "../lib";
import { expectSameRanking, expectSameSearch, ftsCorpus, searchKey, tmpDir } from "./helpers";

const clientPath = path.join(__dirname, "..", "bench", "node_modules", "@lancedb", "lancedb");
test("the official client is installed (scripts/test.sh installs it in bench/)", () => {
  expect(fs.existsSync(clientPath)).toBe(true);
  expect(JSON.parse(fs.readFileSync(path.join(clientPath, "package.json"), "utf8")).version).toBe("0.39.0");
});

describe("the official @lancedb/lancedb client against memwal-server", () => {
  let server: Server;
  // The official client is loaded at run time from bench/ (no types are installed for it here).
  // biome-ignore lint/suspicious/noExplicitAny: untyped module loaded with require
  let lancedb: any;
  beforeAll(async () => {
    server = await serve({ dataDir: tmpDir(), apiKey: "k" });
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    lancedb = require(clientPath);
  });
  afterAll(async () => server.close());

  test("create, describe, count, add, merge insert, query, delete, update, versions, drop", async () => {
    const db = await lancedb.connect("db://test", { apiKey: "k", region: "us-east-1", hostOverride: server.url });
    await db.createTable("t", [
      { id: 1, v: 1.5, s: "a" },
      { id: 2, v: 2.5, s: "b" },
    ]);
    expect(await db.tableNames()).toEqual(["t"]);
    const t = await db.openTable("t");
    const schema = await t.schema();
    expect(schema.fields.map((f: { name: string }) => f.name)).toEqual(["id", "v", "s"]);
    expect(await t.countRows()).toBe(2);
    expect(await t.countRows("id > 1")).toBe(1);
    await t.add([{ id: 3, v: 3.5, s: "c" }]);
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([
        { id: 3, v: 30, s: "c" },
        { id: 4, v: 4, s: "d" },
      ]);
    expect([r.numInsertedRows, r.numUpdatedRows]).toEqual([1, 1]);
    const rows = await t.query().where("id >= 3").toArray();
    expect(rows.map((x: { id: number; v: number }) => [Number(x.id), x.v]).sort()).toEqual([
      [3, 30],
      [4, 4],
    ]);
    await t.delete("id = 1");
    expect(await t.countRows()).toBe(3);
    expect(await t.countRows("id = 1")).toBe(0);
    await t.update({ where: "id = 2", values: { v: 22 } });
    expect(await t.countRows()).toBe(3);
    expect((await t.listVersions()).length).toBeGreaterThanOrEqual(5);
    // Time travel: the official client's checkout reads version 1 through our server.
    await t.checkout(1);
    expect(await t.version()).toBe(1);
    expect(await t.countRows()).toBe(2);
    expect((await t.query().where("id > 1").toArray()).map((x: { id: number }) => Number(x.id))).toEqual([2]);
    await t.checkoutLatest();
    expect(await t.countRows()).toBe(3);
    await db.dropTable("t");
    expect(await db.tableNames()).toEqual([]);
  });

  test("indexes: createIndex, listIndices, indexStats, search through them, dropIndex; what is not built says so", async () => {
    const db = await lancedb.connect("db://test", { apiKey: "k", region: "us-east-1", hostOverride: server.url });
    const data = Array.from({ length: 600 }, (_, i) => ({
      id: i,
      vector: Array.from({ length: 8 }, (_, j) => Math.round(Math.sin(i * 5 + j) * 40) / 4 + (i % 6) * 10),
    }));
    const t = await db.createTable("ix", data);
    const ours = await (await connect(tmpDir())).createTable("ix", data);
    await t.createIndex("vector", {
      config: lancedb.Index.ivfPq({ numPartitions: 6, numSubVectors: 4, distanceType: "l2" }),
    });
    const list = await t.listIndices();
    expect(list.map((i: { name: string; indexType: string; columns: string[] }) => [i.name, i.indexType, i.columns])).toEqual([
      ["vector_idx", "IvfPq", ["vector"]],
    ]);
    // LanceDB's enriched list answer: the official client reads every field of it.
    const [ix] = list;
    expect(ix.indexUuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
    expect([ix.numIndexedRows, ix.numUnindexedRows, ix.numSegments]).toEqual([600, 0, 1]);
    expect(ix.sizeBytes).toBeGreaterThan(600);
    expect(Math.abs(new Date(ix.createdAt).getTime() - Date.now())).toBeLessThan(10 * 60_000);
    expect(ix.indexDetails).toMatchObject({ num_partitions: 6 });
    const stats = await t.indexStats("vector_idx");
    expect([stats.numIndexedRows, stats.numUnindexedRows, stats.distanceType]).toEqual([600, 0, "l2"]);
    expect(await t.indexStats("nope")).toBeUndefined();
    // Every partition probed, every candidate refined: the exact answer.
    const q = data[17].vector;
    expectSameSearch(
      searchKey(await t.search(q).nprobes(6).refineFactor(600).limit(10).toArray()),
      searchKey(await ours.search(q).limit(10).toArray()),
    );
    // A row merged after the build is found by the next search; fastSearch leaves it out.
    const fresh = { id: 9999, vector: [99, 99, 99, 99, 99, 99, 99, 99] };
    await t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().useLsm(true).execute([fresh]);
    expect(Number((await t.search(fresh.vector).limit(1).toArray())[0].id)).toBe(9999);
    expect((await t.search(fresh.vector).fastSearch().limit(1).toArray()).map((r: { id: number }) => Number(r.id))).not.toContain(9999);
    // The official client cannot call optimize on a remote table: the server adds the row to the index in
    // the background (after the MemWAL flush), as LanceDB Cloud does, and waitForIndex sees it.
    await t.waitForIndex(["vector_idx"], 30);
    expect((await t.indexStats("vector_idx")).numUnindexedRows).toBe(0);
    expect((await t.search(fresh.vector).fastSearch().limit(1).toArray()).map((r: { id: number }) => Number(r.id))).toEqual([9999]);
    await t.dropIndex("vector_idx");
    expect(await t.listIndices()).toEqual([]);
    // IVF_RQ through 0.39's Index.ivfRq: built, listed as it spells it, exact when every candidate is refined.
    await t.createIndex("vector", { config: lancedb.Index.ivfRq({ numPartitions: 6, numBits: 2, distanceType: "l2" }) });
    const rq = await t.listIndices();
    expect(rq.map((i: { name: string; indexType: string }) => [i.name, i.indexType])).toEqual([["vector_idx", "IvfRq"]]);
    expect((await t.indexStats("vector_idx")).indexType).toBe("IVF_RQ");
    expect(rq[0].indexDetails).toMatchObject({ num_partitions: 6, num_bits: 2 });
    await ours.add([fresh]);
    expectSameSearch(
      searchKey(await t.search(q).nprobes(6).refineFactor(601).limit(10).toArray()),
      searchKey(await ours.search(q).limit(10).toArray()),
    );
    await t.dropIndex("vector_idx");
    expect(await t.listIndices()).toEqual([]);
    const failure = async (p: Promise<unknown>) =>
      String(
        await p.then(
          () => "no error",
          (e: Error) => e.message,
        ),
      );
    // (hnswPq never reaches a server: the official client refuses it on remote tables itself.)
    expect(await failure(t.createIndex("id", { config: lancedb.Index.labelList() }))).toMatch(
      /index type LABEL_LIST is not supported by memwal yet/,
    );
    // BITMAP: built by the server, listed as 0.39 spells it.
    await t.createIndex("id", { config: lancedb.Index.bitmap(), name: "id_bm" });
    const bm = (await t.listIndices()).filter((i: { name: string }) => i.name === "id_bm");
    expect(bm.map((i: { indexType: string }) => i.indexType)).toEqual(["Bitmap"]);
    await t.dropIndex("id_bm");
    // stats() as the official client parses it; restore() from a checked-out handle.
    const st = await t.stats();
    expect([st.numRows, st.fragmentStats.numFragments > 0, st.totalBytes > 0]).toEqual([await t.countRows(), true, true]);
    const before = await t.version();
    const rowsBefore = await t.countRows();
    await t.add([{ id: 77777, vector: data[0].vector }]);
    await t.checkout(before);
    await t.restore();
    expect(await t.countRows()).toBe(rowsBefore);
    expect(await t.version()).toBe(before + 2);
    // Tags through the official client: create, list, getVersion, checkout(tag), update, delete.
    const tags = await t.tags();
    await tags.create("before", before);
    expect(await tags.getVersion("before")).toBe(before);
    expect(Object.keys(await tags.list())).toEqual(["before"]);
    await t.checkout("before");
    expect(await t.version()).toBe(before);
    await t.checkoutLatest();
    await tags.update("before", before + 1);
    expect(await tags.getVersion("before")).toBe(before + 1);
    await tags.delete("before");
    expect(await tags.list()).toEqual({});
    // No config on a scalar column: a BTREE, listed and used by filters.
    await t.createIndex("id");
    expect((await t.listIndices()).map((i: { name: string; indexType: string }) => [i.name, i.indexType])).toEqual([["id_idx", "BTree"]]);
    expect((await t.indexStats("id_idx"))?.indexType).toBe("BTREE");
    expect(await t.countRows("id = 9999")).toBe(1);
    expect((await t.query().where("id IN (9999, 3)").select(["id"]).toArray()).map((r: { id: number }) => Number(r.id)).sort()).toEqual([
      3, 9999,
    ]);
    await t.dropIndex("id_idx");
    await db.dropTable("ix");
  });

  test("renameTable and schema evolution: addColumns, alterColumns (rename, type), dropColumns", async () => {
    const db = await lancedb.connect("db://test", { apiKey: "k", region: "us-east-1", hostOverride: server.url });
    const t0 = await db.createTable("ev", [
      { id: 1, v: 1.5, s: "a" },
      { id: 2, v: 2.5, s: "b" },
    ]);
    await t0
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .useLsm(true)
      .execute([{ id: 3, v: 3.5, s: "c" }]);
    await db.renameTable("ev", "ev2");
    expect(await db.tableNames()).toContain("ev2");
    expect(await db.tableNames()).not.toContain("ev");
    const t = await db.openTable("ev2");
    expect(await t.countRows()).toBe(3);
    const v0 = await t.version();
    const added = await t.addColumns([{ name: "w", valueSql: "CAST(id * 10 AS BIGINT)" }]);
    expect(added.version).toBe(v0 + 1);
    const altered = await t.alterColumns([
      { path: "s", rename: "s2", nullable: true },
      { path: "w", dataType: "int32" },
    ]);
    expect(altered.version).toBe(v0 + 2);
    const dropped = await t.dropColumns(["v"]);
    expect(dropped.version).toBe(v0 + 3);
    const schema = await t.schema();
    expect(schema.fields.map((f: { name: string }) => f.name)).toEqual(["id", "s2", "w"]);
    expect(String(schema.fields[2].type)).toBe("Int32");
    const rows = await t.query().select(["id", "s2", "w"]).toArray();
    expect(rows.map((r: { id: number; s2: string; w: number }) => [Number(r.id), r.s2, Number(r.w)]).sort()).toEqual([
      [1, "a", 10],
      [2, "b", 20],
      [3, "c", 30],
    ]);
    await expect(t.dropColumns(["nope"])).rejects.toThrow(/nope/);
    await expect(db.renameTable("ev2", "bad/name")).rejects.toThrow(/name/);
    await db.dropTable("ev2");
  });

  test("queries: select({ alias: sql }), orderBy, struct-field filters, explainPlan, analyzePlan", async () => {
    const db = await lancedb.connect("db://test", { apiKey: "k", region: "us-east-1", hostOverride: server.url });
    const t = await db.createTable("qs", [
      { id: 1, v: 3, st: { a: 1, b: "x" } },
      { id: 2, v: 1, st: { a: 2, b: "y" } },
      { id: 3, v: 2, st: { a: 2, b: "z" } },
    ]);
    const sel = await t.query().select({ twice: "id * 2", b: "st.b" }).where("st.a = 2").toArray();
    expect(sel.map((r: { twice: number; b: string }) => [Number(r.twice), r.b]).sort()).toEqual([
      [4, "y"],
      [6, "z"],
    ]);
    const ordered = await t.query().orderBy({ columnName: "v", ascending: false, nullsFirst: false }).select(["id"]).toArray();
    expect(ordered.map((r: { id: number }) => Number(r.id))).toEqual([1, 3, 2]);
    const plan = await t.query().where("id > 1").explainPlan(true);
    expect(plan).toMatch(/filter: id > 1/);
    expect(await t.query().where("id > 1").analyzePlan()).toMatch(/ran: 2 row\(s\)/);
    // takeOffsets / takeRowIds (sent as `_rowoffset IN` / `_rowid IN` filters).
    const byOffset = await t.takeOffsets([0, 2]).toArray();
    expect(byOffset.map((r: { id: number }) => Number(r.id))).toEqual([1, 3]);
    const withIds = await t.query().withRowId().toArray();
    const ids = withIds.filter((r: { id: number }) => Number(r.id) !== 2).map((r: { _rowid: bigint }) => r._rowid);
    const byId = await t.takeRowIds(ids).toArray();
    expect(byId.map((r: { id: number }) => Number(r.id))).toEqual([1, 3]);
    await db.dropTable("qs");
  });

  test("namespaces: create, list, describe, tables inside them, drop", async () => {
    const db = await lancedb.connect("db://test", { apiKey: "k", region: "us-east-1", hostOverride: server.url });
    await db.createNamespace(["ns1"], { properties: { team: "a" } });
    await db.createNamespace(["ns1"], { mode: "exist_ok" });
    expect((await db.listNamespaces()).namespaces).toContain("ns1");
    expect((await db.describeNamespace(["ns1"])).properties).toEqual({ team: "a" });
    await db.createTable("inner", [{ id: 1 }, { id: 2 }], ["ns1"]);
    expect(await db.tableNames(["ns1"])).toEqual(["inner"]);
    expect(await (await db.openTable("inner", ["ns1"])).countRows()).toBe(2);
    expect(await db.tableNames()).not.toContain("inner");
    await db.renameTable("inner", "inner2", { namespacePath: ["ns1"] });
    expect(await db.tableNames(["ns1"])).toEqual(["inner2"]);
    await expect(db.renameTable("inner2", "x", { namespacePath: ["ns1"], newNamespacePath: ["ns2"] })).rejects.toThrow(
      /another namespace is not supported/,
    );
    await expect(db.dropNamespace(["ns1"])).rejects.toThrow(/not empty/);
    await db.dropNamespace(["ns1"], { behavior: "cascade" });
    expect((await db.listNamespaces()).namespaces).not.toContain("ns1");
  });

  test("LSM calls: getLsmStats, flushLsm and checkpointLsm read and drive the server's MemWAL", async () => {
    const srv = await serve({ dataDir: tmpDir(), apiKey: "k", flushIntervalMs: 60_000 });
    try {
      const db = await lancedb.connect("db://test", { apiKey: "k", region: "us-east-1", hostOverride: srv.url });
      const t = await db.createTable("lsm", [{ id: 1, v: 1 }]);
      const upsert = (rows: { id: number; v: number }[]) =>
        t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().useLsm(true).execute(rows);
      const buffered = (s: { buckets: { memtables?: { rows: number }[] }[] } | undefined) =>
        (s?.buckets[0].memtables ?? []).reduce((n, m) => n + m.rows, 0);
      await upsert([
        { id: 2, v: 2 },
        { id: 1, v: 10 },
      ]);
      const s = await t.getLsmStats();
      expect(s?.buckets.length).toBe(1);
      const b = s?.buckets[0];
      expect(buffered(s)).toBe(2);
      expect(b?.generations).toEqual([]);
      expect(Number(b?.walEntryPositionLastSeen)).toBeGreaterThan(Number(b?.replayAfterWalEntryPosition));
      await t.flushLsm();
      const after = await t.getLsmStats();
      expect(buffered(after)).toBe(0);
      expect(after?.buckets[0].replayAfterWalEntryPosition).toBe(after?.buckets[0].walEntryPositionLastSeen);
      expect(after?.buckets[0].manifestVersion).toBe(await t.version());
      await upsert([{ id: 3, v: 3 }]);
      await t.checkpointLsm();
      expect(buffered(await t.getLsmStats(true))).toBe(0);
      expect(await t.countRows()).toBe(3);
    } finally {
      await srv.close();
    }
  });

  test("LSM write spec: set, read back and unset by the official client; its plain upserts then go to the MemWAL", async () => {
    const srv = await serve({ dataDir: tmpDir(), apiKey: "k", flushIntervalMs: 60_000 });
    try {
      // A key column must be non-nullable, and Lance never makes a nullable column non-nullable, so the
      // table is made with that schema by memwal's client; the official client then opens it.
      const schema = new arrow.Schema([
        new arrow.Field("id", new arrow.Utf8(), false),
        new arrow.Field("v", new arrow.Float64(), true),
        new arrow.Field("name", new arrow.Utf8(), true),
      ]);
      const mineDb = await connect("db://test", { apiKey: "k", hostOverride: srv.url });
      const mine = await mineDb.createTable(
        "spec",
        [
          { id: "a", v: 1, name: "x" },
          { id: "b", v: 2, name: "y" },
        ],
        { schema },
      );
      const db = await lancedb.connect("db://test", { apiKey: "k", region: "us-east-1", hostOverride: srv.url });
      const t = await db.openTable("spec");
      // 0.39's remote table refuses setUnenforcedPrimaryKey itself; memwal's client records it on our server.
      await expect(t.setUnenforcedPrimaryKey("id")).rejects.toThrow(/not supported/);
      await expect(mine.setUnenforcedPrimaryKey("name")).rejects.toThrow(/must not be nullable/);
      await expect(mine.setUnenforcedPrimaryKey("v")).rejects.toThrow(/type Float64, which is not supported as a primary key/);
      await expect(mine.alterColumns([{ path: "name", nullable: false }])).rejects.toThrow(/cannot be made non-nullable/);
      await mine.setUnenforcedPrimaryKey("id");
      expect(await t.getLsmWriteSpec()).toBeUndefined();
      await expect(t.setLsmWriteSpec({ specType: "bucket", column: "nope", numBuckets: 2 })).rejects.toThrow(/column 'nope' not found/);
      await t.setLsmWriteSpec({ specType: "bucket", column: "id", numBuckets: 2 });
      expect(await t.getLsmWriteSpec()).toMatchObject({ specType: "bucket", column: "id", numBuckets: 2, maintainedIndexes: [] });
      expect(await mine.getLsmWriteSpec()).toMatchObject({ specType: "bucket", column: "id", numBuckets: 2 });
      const buffered = async () => ((await mine.getLsmStats())?.buckets[0].memtables ?? []).reduce((n, m) => n + m.rows, 0);
      await t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute([
          { id: "b", v: 20 },
          { id: "c", v: 3 },
        ]);
      expect(await buffered()).toBe(2);
      const rows = async (q: { toArray(): Promise<{ id: string; v: number }[]> }) =>
        (await q.toArray()).map((x) => [x.id, Number(x.v)]).sort((x, y) => String(x[0]).localeCompare(String(y[0])));
      expect(await rows(t.query())).toEqual([
        ["a", 1],
        ["b", 20],
        ["c", 3],
      ]);
      // The official client's use_lsm=false reads the base table only.
      expect(await rows(t.query().useLsm(false))).toEqual([
        ["a", 1],
        ["b", 2],
      ]);
      await expect(
        t
          .mergeInsert("id")
          .whenNotMatchedInsertAll()
          .execute([{ id: "d", v: 4 }]),
      ).rejects.toThrow(/only the upsert form/);
      const std = await t
        .mergeInsert("id")
        .whenNotMatchedInsertAll()
        .useLsm(false)
        .execute([{ id: "d", v: 4 }]);
      expect(std.numInsertedRows).toBe(1);
      expect(await buffered()).toBe(0); // a direct write merges the MemWAL first
      await t.unsetLsmWriteSpec();
      expect(await t.getLsmWriteSpec()).toBeUndefined();
      await expect(t.unsetLsmWriteSpec()).rejects.toThrow(/no LSM write spec is set/);
      await t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .execute([{ id: "e", v: 5 }]);
      expect(await buffered()).toBe(0);
      expect(await t.countRows()).toBe(5);
    } finally {
      await srv.close();
    }
  });

  test("vector search: search, vectorSearch with several vectors, distance types, filters, row ids", async () => {
    const db = await lancedb.connect("db://test", { apiKey: "k", region: "us-east-1", hostOverride: server.url });
    const data = Array.from({ length: 120 }, (_, i) => ({
      id: i,
      kind: ["a", "b", "c"][i % 3],
      vector: Array.from({ length: 6 }, (_, j) => Math.sin(i * 7 + j * 3)),
    }));
    const theirs = await db.createTable("vs", data);
    const ours = await (await connect(tmpDir())).createTable("vs", data);
    const key = searchKey;
    const same = expectSameSearch;
    const q = data[5].vector;
    for (const dt of ["l2", "cosine", "dot"]) {
      same(
        key(await theirs.search(q).distanceType(dt).limit(8).toArray()),
        key(
          await ours
            .search(q)
            .distanceType(dt as "l2")
            .limit(8)
            .toArray(),
        ),
      );
    }
    same(
      key(await theirs.search(q).where("kind = 'b'").limit(5).toArray()),
      key(await ours.search(q).where("kind = 'b'").limit(5).toArray()),
    );
    same(
      key(await theirs.search(q).where("kind = 'b'").postfilter().limit(9).toArray()),
      key(await ours.search(q).where("kind = 'b'").postfilter().limit(9).toArray()),
    );
    const multi = await theirs.vectorSearch([data[1].vector, data[2].vector]).limit(3).toArray();
    same(key(multi), key(await ours.vectorSearch([data[1].vector, data[2].vector]).limit(3).toArray()));
    expect(multi.map((r: { query_index: number }) => r.query_index)).toEqual([0, 0, 0, 1, 1, 1]);
    const withIds = await theirs.search(q).withRowId().select(["id"]).limit(3).toArrow();
    expect(withIds.schema.fields.map((f: { name: string }) => f.name)).toEqual(["id", "_distance", "_rowid"]);
    // Rows upserted through the MemWAL (the official useLsm switch) are found by the next search.
    const fresh = { id: 500, kind: "a", vector: [9, 9, 9, 9, 9, 9] };
    await theirs.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().useLsm(true).execute([fresh]);
    const hit = await theirs.search(fresh.vector).limit(1).toArray();
    expect([Number(hit[0].id), hit[0]._distance]).toEqual([500, 0]);
    const bad = await theirs
      .search([1, 2, 3])
      .toArray()
      .then(
        () => null,
        (e: Error) => e,
      );
    expect(String(bad?.message)).toMatch(/dimension 3/);
    await db.dropTable("vs");
  });

  test("full-text search: the official client creates an FTS index and searches; answers equal a local table's", async () => {
    const db = await lancedb.connect("db://test", { apiKey: "k", region: "us-east-1", hostOverride: server.url });
    const rows = [
      { id: 1, text: "the quick brown fox jumps over the lazy dog" },
      { id: 2, text: "a lazy cat sleeps all day" },
      { id: 3, text: "brown birds fly south in winter" },
      { id: 4, text: "dogs chase cats and foxes" },
    ];
    const t = await db.createTable("fts", rows);
    await t.createIndex("text", { config: lancedb.Index.fts({ withPosition: true }) });
    const listed = await t.listIndices();
    expect(listed.map((i: { name: string; indexType: string }) => [i.name, i.indexType])).toEqual([["text_idx", "FTS"]]);
    const local = await (await connect(tmpDir())).createTable("fts", rows);
    await local.createIndex("text", { config: ours.Index.fts({ withPosition: true }) });
    type Row = { id: number | bigint; _score: number };
    const key = (r: Row[]) => r.map((x) => [Number(x.id), Math.round(x._score * 1e4) / 1e4]);
    const theirs = async (q: unknown) => key(await t.query().fullTextSearch(q).toArray());
    const mine = async (q: unknown) =>
      key(
        (await local
          .query()
          .fullTextSearch(q as string)
          .toArray()) as Row[],
      );
    for (const [a, b] of [
      ["lazy", "lazy"],
      ["brown lazy", "brown lazy"],
      [
        new lancedb.MatchQuery("lazy dog", "text", { operator: lancedb.Operator.And }),
        new ours.MatchQuery("lazy dog", "text", { operator: ours.Operator.And }),
      ],
      [new lancedb.PhraseQuery("lazy dog", "text"), new ours.PhraseQuery("lazy dog", "text")],
      [
        new lancedb.BooleanQuery([
          [lancedb.Occur.Must, new lancedb.MatchQuery("brown", "text")],
          [lancedb.Occur.MustNot, new lancedb.MatchQuery("birds", "text")],
        ]),
        new ours.BooleanQuery([
          [ours.Occur.Must, new ours.MatchQuery("brown", "text")],
          [ours.Occur.MustNot, new ours.MatchQuery("birds", "text")],
        ]),
      ],
    ]) {
      const got = await theirs(a);
      expect(got.length).toBeGreaterThan(0);
      expect(got).toEqual(await mine(b));
    }
    expect((await t.search("winter", "fts").toArray()).map((r: Row) => Number(r.id))).toEqual([3]);
    await t.dropIndex("text_idx");
    expect(await t.listIndices()).toEqual([]);
    await db.dropTable("fts");
  });

  test("full-text and hybrid search through our server answer as the client's own embedded engine", async () => {
    const served = await lancedb.connect("db://test", { apiKey: "k", region: "us-east-1", hostOverride: server.url });
    const embedded = await lancedb.connect(tmpDir());
    const rows = ftsCorpus(400, 26);
    const v = rows[7].vector;
    // biome-ignore lint/suspicious/noExplicitAny: the official client's tables and queries are untyped here
    type Q = any;
    type Row = Record<string, unknown>;
    const pairs = (score: string) => (r: Row[]) => r.map((x) => [Number(x.id), Number(x[score])]);
    const fts =
      (q: Q, n = 10) =>
      (t: Q) =>
        t.query().fullTextSearch(q).select(["id"]).limit(n).toArray().then(pairs("_score"));
    const rrf = async (k?: number) => (k === undefined ? lancedb.rerankers.RRFReranker.create() : lancedb.rerankers.RRFReranker.create(k));
    const M = lancedb.MatchQuery;
    const cases: Record<string, (t: Q) => Promise<number[][]>> = {
      match: fts("w6 w60 maple"),
      match_and: fts(new M("w1 w2", "text", { operator: lancedb.Operator.And }), 20),
      fuzzy: fts(new M("harbr", "text", { fuzziness: 1 })),
      phrase: fts(new lancedb.PhraseQuery("silver maple harbor", "text")),
      quoted: fts('"silver maple harbor"'),
      // The full-text half of hybrid_rrf.
      phrase_of_hybrid: fts(new lancedb.PhraseQuery("w0 w1", "text")),
      boolean: fts(
        new lancedb.BooleanQuery([
          [lancedb.Occur.Must, new M("maple", "text")],
          [lancedb.Occur.Should, new M("w3", "text")],
          [lancedb.Occur.MustNot, new M("w7", "text")],
        ]),
        20,
      ),
      where: (t) => t.query().fullTextSearch("w6 w60 maple").where("id % 3 = 0").select(["id"]).limit(10).toArray().then(pairs("_score")),
      hybrid: (t) =>
        t.query().nearestTo(v).fullTextSearch("w6 w60 maple").select(["id"]).limit(10).toArray().then(pairs("_relevance_score")),
      hybrid_rrf: async (t) =>
        t
          .query()
          .nearestTo(v)
          .fullTextSearch(new lancedb.PhraseQuery("w0 w1", "text"))
          .rerank(await rrf(30))
          .select(["id"])
          .limit(12)
          .toArray()
          .then(pairs("_relevance_score")),
      hybrid_postfilter: async (t) =>
        t
          .query()
          .nearestTo(v)
          .fullTextSearch("w6 w60 maple")
          .where("id % 2 = 0")
          .postfilter()
          .rerank(await rrf())
          .select(["id"])
          .limit(10)
          .toArray()
          .then(pairs("_relevance_score")),
    };
    const fast: Record<string, (t: Q) => Promise<number[][]>> = {
      fast_match: (t) => t.query().fullTextSearch("w6 w60 maple").fastSearch().select(["id"]).limit(10).toArray().then(pairs("_score")),
    };
    const answers: Array<Record<string, number[][]>> = [];
    for (const db of [served, embedded]) {
      const t = await db.createTable("ftsh", rows);
      await t.createIndex("text", { config: lancedb.Index.fts({ withPosition: true }) });
      const got: Record<string, number[][]> = {};
      for (const [name, run] of Object.entries(cases)) got[name] = await run(t);
      // Rows the index does not cover: fastSearch leaves them out on both.
      await t.add(ftsCorpus(60, 27, 1000));
      for (const [name, run] of Object.entries(fast)) got[name] = await run(t);
      // A vector search with fastSearch and no vector index: no row is indexed, none is answered (on both).
      got.fast_vector = await t.query().nearestTo(v).fastSearch().select(["id"]).limit(5).toArray().then(pairs("_distance"));
      answers.push(got);
    }
    const [mine, theirs] = answers;
    for (const name of [...Object.keys(cases), ...Object.keys(fast)]) {
      expect([name, theirs[name].length > 0]).toEqual([name, true]);
      expectSameRanking(name, mine[name], theirs[name]);
    }
    // RRF fuses ranks: the full-text halves have no tied scores (LanceDB orders ties by its search's internals,
    // memwal by row id), so the fused answers must agree row for row.
    for (const half of ["match", "phrase_of_hybrid"]) {
      const s = theirs[half].map((x) => x[1]);
      expect([half, s.some((x, i) => i > 0 && Math.abs(x - s[i - 1]) <= 1e-6 * x)]).toEqual([half, false]);
    }
    expect(theirs.hybrid_postfilter.length).toBeLessThan(10);
    expect([mine.fast_vector, theirs.fast_vector]).toEqual([[], []]);
    await served.dropTable("ftsh");
  }, 120_000);
});
