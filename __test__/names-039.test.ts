/**
 * More names of @lancedb/lancedb 0.39 that ported code calls: listTables paging, prewarmIndex, packBits, nearestToText and
 * usesV2ManifestPaths answer; jobs, field-metadata updates, computed-column and view refreshes and the V2 manifest
 * migration are refused by name.
 */
import { connect, Index, IndexNotFoundError, InvalidInputError, MatchQuery, NotSupportedError, packBits } from "../lib";
import { tmpDir } from "./helpers";

describe("Connection.listTables", () => {
  test("pages through the names with the token a full page carries", async () => {
    const db = await connect(tmpDir());
    for (const n of ["a", "b", "c", "d", "e"]) await db.createTable(n, [{ id: 1 }]);
    expect(await db.listTables()).toEqual({ tables: ["a", "b", "c", "d", "e"] });
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const page = await db.listTables({ limit: 2, pageToken: token });
      seen.push(...page.tables);
      token = page.pageToken;
      pages += 1;
    } while (token !== undefined);
    expect(seen).toEqual(["a", "b", "c", "d", "e"]);
    expect(pages).toBe(3);
    await expect(db.listTables({ after: "a" } as never)).rejects.toThrow(InvalidInputError);
  });

  test("jobs are refused by name", async () => {
    const db = await connect(tmpDir());
    await expect(db.openJob("j")).rejects.toThrow(/jobs are not supported by memwal/);
    await expect(db.listJobs()).rejects.toThrow(NotSupportedError);
    await expect(db.cancelJob("j")).rejects.toThrow(NotSupportedError);
  });
});

describe("Table names", () => {
  test("prewarmIndex checks the index exists; the refusals name what is not supported", async () => {
    const db = await connect(tmpDir());
    const t = await db.createTable(
      "t",
      Array.from({ length: 300 }, (_, i) => ({ id: i, vector: [i % 3, i % 5] })),
    );
    await t.createIndex("vector", { name: "v_idx" });
    await expect(t.prewarmIndex("v_idx")).resolves.toBeUndefined();
    await expect(t.prewarmIndex("nope")).rejects.toThrow(IndexNotFoundError);
    expect(await t.usesV2ManifestPaths()).toBe(false);
    await expect(t.migrateManifestPathsV2()).rejects.toThrow(NotSupportedError);
    await expect(t.updateFieldMetadata([{ path: "id", metadata: { a: "b" } }])).rejects.toThrow(
      /updateFieldMetadata is not supported by memwal/,
    );
    await expect(t.refreshColumn("id")).rejects.toThrow(/computed columns/);
    await expect(t.refreshColumnAsync("id")).rejects.toThrow(NotSupportedError);
    await expect(t.refreshMaterializedView()).rejects.toThrow(/materialized views/);
  });
});

describe("packBits", () => {
  test("packs bits least significant first, padding the last byte", () => {
    expect(packBits([1, 0, 0, 0, 0, 0, 0, 1, 1, 1])).toEqual([129, 3]);
    expect(packBits([0, 1])).toEqual([2]);
    expect(packBits([])).toEqual([]);
    expect(() => packBits([1, 2])).toThrow(/packBits\(data\)\[1\] is 2/);
  });
});

describe("createTable({ name, data, ...options })", () => {
  test("takes 0.39's one-object form, and refuses it mixed with more arguments or without data", async () => {
    const db = await connect(tmpDir());
    await db.createTable("t", [{ id: 1 }, { id: 2 }]);
    const t = await db.createTable({ name: "t", data: [{ id: 3 }], mode: "overwrite" });
    expect(await t.countRows()).toBe(1);
    const loose = db.createTable.bind(db) as (...args: unknown[]) => Promise<unknown>;
    await expect(loose({ name: "u", data: [{ id: 1 }] }, [{ id: 2 }])).rejects.toThrow(/takes no other argument/);
    await expect(db.createTable({ name: "u" } as never)).rejects.toThrow(/data is required/);
    await expect(db.createTable({ name: "u", data: [{ id: 1 }], bogus: 1 } as never)).rejects.toThrow(InvalidInputError);
    await expect(db.createTable("v" as string, undefined as never)).rejects.toThrow(/data is required/);
  });
});

describe("Query.nearestToText", () => {
  test("is a full-text search of the text (in the columns given), alone or with a vector", async () => {
    const db = await connect(tmpDir());
    const t = await db.createTable("t", [
      { id: 1, title: "red apple", body: "fruit", vector: [0, 1] },
      { id: 2, title: "green pear", body: "red fruit", vector: [5, 5] },
    ]);
    await t.createIndex("title", { config: Index.fts() });
    await t.createIndex("body", { config: Index.fts() });
    const ids = async (q: { toArray(): Promise<Record<string, unknown>[]> }) => (await q.toArray()).map((r) => r.id).sort();
    expect(await ids(t.query().nearestToText("red", ["title"]))).toEqual([1]);
    expect(await ids(t.query().nearestToText("red", ["body"]))).toEqual([2]);
    expect(await ids(t.query().nearestToText(new MatchQuery("pear", "title")))).toEqual([2]);
    expect(await ids(t.query().nearestToText("red", ["title"]).nearestTo([5, 5]))).toEqual([1, 2]);
  });
});

describe("0.39's module layout and FTS options", () => {
  test("the full-text query classes are found in the query module too, as in 0.39", async () => {
    const q = await import("../lib/query");
    const root = await import("../lib");
    expect(q.MatchQuery).toBe(root.MatchQuery);
    expect(q.BooleanQuery).toBe(root.BooleanQuery);
    expect(q.Occur.Should).toBe(root.Occur.Should);
    expect(q.Operator.And).toBe(root.Operator.And);
    expect(q.instanceOfFullTextQuery(new MatchQuery("a", "text"))).toBe(true);
    expect(q.instanceOfFullTextQuery({ query: "a" })).toBe(false);
  });

  test("Index.fts blockSize: a value 0.39 refuses gets its text, 128 and 256 are taken", () => {
    expect(() => Index.fts({ blockSize: 129 } as never)).toThrow(InvalidInputError);
    expect(() => Index.fts({ blockSize: 129 } as never)).toThrow("FTS inverted index block_size must be one of 128 or 256, got 129");
    for (const size of [128, 256] as const) expect(Index.fts({ blockSize: size })).toBeInstanceOf(Index);
  });
});

describe("VectorQuery nprobes bounds", () => {
  test("0.39's checks and texts; nprobes then a bound keeps the other bound", async () => {
    const db = await connect(tmpDir());
    const rows = Array.from({ length: 300 }, (_, i) => ({ id: i, vector: [i % 17, (i * 7) % 13, i % 5, 1] }));
    const t = await db.createTable("np", rows);
    await t.createIndex("vector", { config: Index.ivfFlat({ numPartitions: 30 }) });
    const q = [3, 4, 2, 1];
    expect(() => t.query().nearestTo(q).minimumNprobes(0)).toThrow("Invalid input, minimum_nprobes must be greater than 0");
    // The default minimum is 20.
    expect(() => t.query().nearestTo(q).maximumNprobes(5)).toThrow(
      "Invalid input, maximum_nprobes must be greater than or equal to minimum_nprobes",
    );
    expect(() => t.query().nearestTo(q).minimumNprobes(2).maximumNprobes(8).minimumNprobes(9)).toThrow(
      "Invalid input, minimum_nprobes must be less than or equal to maximum_nprobes",
    );
    expect(() => t.query().nearestTo(q).nprobes(4).minimumNprobes(5)).toThrow("less than or equal to maximum_nprobes");
    // 0: no maximum. Every partition probed (nprobes 30) answers as the exact search.
    const exact = await t.query().nearestTo(q).limit(5).bypassVectorIndex().toArray();
    const all = await t.query().nearestTo(q).limit(5).minimumNprobes(30).maximumNprobes(0).toArray();
    expect(all.map((r) => r._distance)).toEqual(exact.map((r) => r._distance));
    const split = await t.query().nearestTo(q).limit(5).nprobes(30).minimumNprobes(29).toArray();
    expect(split.length).toBe(5);
  });
});
