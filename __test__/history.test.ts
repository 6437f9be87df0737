/**
 * restore() and stats() through the TS API on a local folder table, an in-memory table and a table of the real
 * bundled server (through our remote client): restore from a checked-out handle and by number, later merges
 * seeing the restored keys, memWal rows acknowledged before a restore being history, stats counting rows,
 * fragments and bytes.
 */
import { InvalidInputError, NotSupportedError, TableNotFoundError, VersionNotFoundError } from "../lib";
import { tableKinds } from "./helpers";

const { kinds } = tableKinds();

const byId = async (t: import("../lib").Table) =>
  (await t.query().select(["id", "v"]).toArray()).map((r) => [Number(r.id), Number(r.v)]).sort((a, b) => a[0] - b[0]);

describe.each(kinds)("restore and stats on a %s table", (kind, open) => {
  test("restore makes an old version the latest; merges then see its keys", async () => {
    const db = await open();
    const t = await db.createTable(`r_${kind.replace(/\W/g, "_")}`, [
      { id: 1, v: 10 },
      { id: 2, v: 20 },
    ]);
    const v1 = await t.version();
    const merge = t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll();
    await merge.execute([
      { id: 3, v: 30 },
      { id: 1, v: 11 },
    ]);
    await t.delete("id = 2");
    if (kind === "served") {
      // Acknowledged on the MemWAL path, still buffered: history once restored past.
      await t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .memWal()
        .execute([{ id: 4, v: 40 }]);
      expect(await t.countRows()).toBe(3);
    }
    await t.checkout(v1);
    const v = await t.restore();
    expect(v).toBeGreaterThan(v1);
    expect(await t.version()).toBe(v);
    expect(await byId(t)).toEqual([
      [1, 10],
      [2, 20],
    ]);
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([
        { id: 3, v: 33 },
        { id: 2, v: 22 },
      ]);
    expect([r.numInsertedRows, r.numUpdatedRows]).toEqual([1, 1]);
    await t.restore(v);
    expect(await byId(t)).toEqual([
      [1, 10],
      [2, 20],
    ]);
    expect((await t.listVersions()).at(-1)?.version).toBe(await t.version());
    await expect(t.restore()).rejects.toThrow(InvalidInputError);
    await expect(t.restore()).rejects.toThrow("checkout before running restore");
    await expect(t.restore(9999)).rejects.toThrow(VersionNotFoundError);
    await expect(t.restore(-1)).rejects.toThrow(InvalidInputError);
    if (kind === "served") {
      // A 404 on restore is the version's when the table is there, the table's when it is not.
      await db.dropTable(`r_${kind.replace(/\W/g, "_")}`);
      await expect(t.restore(1)).rejects.toThrow(TableNotFoundError);
    }
  });

  test("openTable(name, namespace, { version }) opens that version read-only; what memwal does not honour is refused", async () => {
    const db = await open();
    const name = `ov_${kind.replace(/\W/g, "_")}`;
    const t = await db.createTable(name, [{ id: 1, v: 10 }]);
    const v1 = await t.version();
    await t.add([{ id: 2, v: 20 }]);
    // Was: the options were dropped and the latest version opened, a silent wrong answer.
    const old = await db.openTable(name, undefined, { version: v1 });
    expect(await old.version()).toBe(v1);
    expect(await byId(old)).toEqual([[1, 10]]);
    await expect(old.add([{ id: 3, v: 30 }])).rejects.toThrow(/checked out/);
    await old.checkoutLatest();
    expect(await old.countRows()).toBe(2);
    await expect(db.openTable(name, undefined, { version: 99 })).rejects.toBeInstanceOf(VersionNotFoundError);
    await expect(db.openTable(name, undefined, { branch: "exp" })).rejects.toBeInstanceOf(NotSupportedError);
    await expect(db.openTable(name, undefined, { indexCacheSize: 8 })).rejects.toBeInstanceOf(NotSupportedError);
    await expect(db.openTable(name, undefined, { versoin: 1 } as never)).rejects.toThrow(/unknown option 'versoin'/);
  });

  test("stats count rows, fragments and bytes", async () => {
    const db = await open();
    const t = await db.createTable(`s_${kind.replace(/\W/g, "_")}`, [
      { id: 1, v: 1 },
      { id: 2, v: 2 },
      { id: 3, v: 3 },
    ]);
    await t.add([{ id: 4, v: 4 }]);
    await t.delete("id = 1");
    let s = await t.stats();
    expect(s.numRows).toBe(3);
    expect(s.numIndices).toBe(0);
    expect(s.totalBytes).toBeGreaterThan(0);
    expect(s.fragmentStats).toEqual({
      numFragments: 2,
      numSmallFragments: 2,
      lengths: { min: 1, max: 2, mean: 1, p25: 1, p50: 2, p75: 2, p99: 2 },
    });
    await t.createIndex("id");
    if (kind === "served") {
      await t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .memWal()
        .execute([{ id: 9, v: 9 }]);
    }
    s = await t.stats();
    expect([s.numRows, s.numIndices]).toEqual([kind === "served" ? 4 : 3, 1]);
  });

  test("getLsmStats, flushLsm, checkpointLsm: a served table's MemWAL; refused on a local one (as 0.39)", async () => {
    const db = await open();
    const t = await db.createTable(`l_${kind.replace(/\W/g, "_")}`, [{ id: 1, v: 1 }]);
    if (kind !== "served") {
      await expect(t.getLsmStats()).rejects.toThrow(NotSupportedError);
      await expect(t.flushLsm()).rejects.toThrow(NotSupportedError);
      await expect(t.checkpointLsm()).rejects.toThrow(NotSupportedError);
      return;
    }
    const buffered = async () => ((await t.getLsmStats())?.buckets[0].memtables ?? []).reduce((n, m) => n + m.rows, 0);
    const upsert = (rows: { id: number; v: number }[]) =>
      t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll().memWal().execute(rows);
    await upsert([
      { id: 1, v: 10 },
      { id: 2, v: 2 },
    ]);
    expect(await buffered()).toBe(2);
    const b = (await t.getLsmStats())?.buckets[0];
    expect(b?.walEntryPositionLastSeen).toBeGreaterThan(b?.replayAfterWalEntryPosition ?? 0);
    await t.flushLsm();
    expect(await buffered()).toBe(0);
    const a = (await t.getLsmStats())?.buckets[0];
    expect(a?.replayAfterWalEntryPosition).toBe(a?.walEntryPositionLastSeen);
    expect(a?.manifestVersion).toBe(await t.version());
    await upsert([{ id: 3, v: 3 }]);
    await t.checkpointLsm();
    expect(await buffered()).toBe(0);
    expect(await byId(t)).toEqual([
      [1, 10],
      [2, 2],
      [3, 3],
    ]);
    await expect(t.getLsmStats("yes" as never)).rejects.toThrow(InvalidInputError);
  });

  test("tags name versions; checkout(tag) reads one", async () => {
    const db = await open();
    const t = await db.createTable(`t_${kind.replace(/\W/g, "_")}`, [{ id: 1, v: 1 }]);
    const v1 = await t.version();
    await t.add([{ id: 2, v: 2 }]);
    const tags = await t.tags();
    await tags.create("first", v1);
    await tags.create("second", await t.version());
    await expect(tags.create("first", v1)).rejects.toThrow("already has the tag 'first'");
    await expect(tags.create("bad/name", v1)).rejects.toThrow(InvalidInputError);
    await expect(tags.create("x", 999)).rejects.toThrow(VersionNotFoundError);
    const list = await tags.list();
    expect(Object.keys(list).sort()).toEqual(["first", "second"]);
    expect(list.first.version).toBe(v1);
    expect(await tags.getVersion("second")).toBe(v1 + 1);
    await t.checkout("first");
    expect(await t.countRows()).toBe(1);
    await tags.update("first", v1 + 1);
    await t.checkout("first");
    expect(await t.countRows()).toBe(2);
    await t.checkoutLatest();
    await tags.delete("second");
    await expect(tags.getVersion("second")).rejects.toThrow("has no tag 'second'");
    await expect(t.checkout("second")).rejects.toThrow("has no tag 'second'");
    // A missing tag is TagNotFound (a 404 on the wire), not InvalidInput.
    await expect(tags.getVersion("second")).rejects.toMatchObject({ code: "TagNotFound" });
  });
});

describe.each(kinds)("optimize({ cleanupOlderThan }) on a %s table", (kind, open) => {
  test("removes old versions and their files, keeps the latest and tagged ones, says how much", async () => {
    const db = await open();
    const t = await db.createTable(`clean_${kind.replace(/\W/g, "_")}`, [{ id: 1, v: 1 }]);
    for (let i = 2; i <= 5; i++) {
      await t.add([{ id: i, v: i }]);
      await t.delete(`id = ${i - 1}`);
    }
    const tagged = 3;
    await (await t.tags()).create("keep", tagged);
    // The default cutoff (7 days) removes nothing here.
    const none = await t.optimize();
    expect(none.prune).toEqual({ bytesRemoved: 0, oldVersionsRemoved: 0 });
    const before = (await t.listVersions()).length;
    const latest = await t.version();
    // Versions strictly older than the cutoff go; let the clock pass the last commit's millisecond.
    await new Promise((r) => setTimeout(r, 5));
    const s = await t.optimize({ cleanupOlderThan: new Date() });
    const kept = (await t.listVersions()).map((v) => v.version);
    expect(kept).toEqual([tagged, latest]);
    expect(s.prune.oldVersionsRemoved).toBe(before - kept.length);
    expect(s.prune.bytesRemoved).toBeGreaterThan(0);
    await expect(t.checkout(2)).rejects.toMatchObject({ code: "VersionNotFound" });
    await t.checkout("keep");
    expect(await t.countRows()).toBeGreaterThan(0);
    await t.checkoutLatest();
    expect((await t.query().toArray()).map((r) => Number(r.id))).toEqual([5]);
    await expect(t.optimize({ cleanupOlderThan: -5 })).rejects.toThrow(/cleanupOlderThan/);
    await expect(t.optimize({ olderThan: 5 } as never)).rejects.toThrow(/unknown option 'olderThan'/);
  });
});

describe.each(kinds)("optimize({ targetRowsPerFragment, materializeDeletionsThreshold }) on a %s table", (kind, open) => {
  test("compacts as Lance does: small fragments together, a heavily deleted one alone, nothing else", async () => {
    const db = await open();
    const t = await db.createTable(`compact_${kind.replace(/\W/g, "_")}`, [{ id: 0, v: 0 }]);
    for (let i = 1; i < 6; i++) await t.add([{ id: i, v: i }]);
    const fragments = async () => (await t.stats()).fragmentStats.numFragments;
    const ids = async () => (await t.query().toArray()).map((r) => Number(r.id)).sort((a, b) => a - b);
    expect(await fragments()).toBe(6);
    // No fragment is smaller than one row: nothing to do.
    const none = await t.optimize({ targetRowsPerFragment: 1 });
    expect(none.compaction).toEqual({ fragmentsRemoved: 0, fragmentsAdded: 0, filesRemoved: 0, filesAdded: 0 });
    expect(await fragments()).toBe(6);
    // Lance's defaults: the six small fragments become one.
    const all = await t.optimize();
    expect(all.compaction).toMatchObject({ fragmentsRemoved: 6, fragmentsAdded: 1 });
    expect(await fragments()).toBe(1);
    expect(await ids()).toEqual([0, 1, 2, 3, 4, 5]);
    // A 10-row fragment with 2 rows deleted (20%): rewritten alone past a 0.1 threshold, kept under 0.5.
    await t.add(Array.from({ length: 10 }, (_, i) => ({ id: 10 + i, v: i })));
    await t.delete("id IN (10, 11)");
    const light = await t.optimize({ targetRowsPerFragment: 5, materializeDeletionsThreshold: 0.5 });
    expect(light.compaction.fragmentsRemoved).toBe(0);
    const heavy = await t.optimize({ targetRowsPerFragment: 5, materializeDeletionsThreshold: 0.1 });
    expect(heavy.compaction).toMatchObject({ fragmentsRemoved: 1, fragmentsAdded: 1 });
    expect(await fragments()).toBe(2);
    expect(await ids()).toEqual([0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17, 18, 19]);
    for (const [bad, name] of [
      [{ targetRowsPerFragment: 0 }, "targetRowsPerFragment"],
      [{ targetRowsPerFragment: 1.5 }, "targetRowsPerFragment"],
      [{ materializeDeletionsThreshold: 2 }, "materializeDeletionsThreshold"],
      [{ materializeDeletionsThreshold: Number.NaN }, "materializeDeletionsThreshold"],
      [{ materializeDeletionsThreshold: "0.1" }, "materializeDeletionsThreshold"],
    ] as const) {
      await expect(t.optimize(bad as never)).rejects.toMatchObject({ code: "InvalidInput", message: expect.stringContaining(name) });
    }
    expect(await fragments()).toBe(2);
  });
});

describe.each(kinds)("updateConfig / config on a %s table", (kind, open) => {
  test("lance.auto_cleanup.* clean every interval-th version, keep tagged ones, and are checked", async () => {
    const db = await open();
    const t = await db.createTable(`cfg_${kind.replace(/\W/g, "_")}`, [{ id: 1, v: 1 }]);
    await (await t.tags()).create("first", 1);
    await t.updateConfig({ "lance.auto_cleanup.interval": "2", "lance.auto_cleanup.older_than": "0s", mine: "x" });
    expect(await t.config()).toMatchObject({ "lance.auto_cleanup.interval": "2", mine: "x" });
    const tick = () => new Promise((r) => setTimeout(r, 5));
    await tick();
    await t.add([{ id: 2, v: 2 }]); // version 3: not due
    await tick();
    await t.add([{ id: 3, v: 3 }]); // version 4: due, 2 and 3 go (a served table leaves it to the server's upkeep)
    expect((await t.listVersions()).map((v) => v.version)).toEqual(kind === "served" ? [1, 2, 3, 4] : [1, 4]);
    expect(await t.countRows()).toBe(3);
    await t.checkout("first");
    expect(await t.countRows()).toBe(1);
    await t.checkoutLatest();
    await t.updateConfig({}, ["lance.auto_cleanup.interval"]);
    expect(Object.keys(await t.config())).not.toContain("lance.auto_cleanup.interval");
    await t.add([{ id: 4, v: 4 }]);
    await t.add([{ id: 5, v: 5 }]);
    expect((await t.listVersions()).map((v) => v.version)).toEqual(kind === "served" ? [1, 2, 3, 4, 5, 6, 7] : [1, 4, 5, 6, 7]);
    await expect(t.updateConfig({ "lance.auto_cleanup.older_than": "soon" })).rejects.toThrow(/older_than.*'soon'/);
    await expect(t.updateConfig({ "memwal.flushed_seq": "1" })).rejects.toThrow(/belong to memwal/);
    await expect(t.updateConfig({ mine: 5 } as never)).rejects.toThrow(/updateConfig\(upsertValues\)\.mine must be a string/);
    await expect(t.updateConfig({}, "mine" as never)).rejects.toThrow(/deleteKeys/);
    await expect(t.updateConfig(new Map([["mine", "y"]]) as never)).rejects.toThrow(/plain object of strings/);
    expect(await t.version()).toBe(7);
  });
});
