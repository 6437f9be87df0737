/**
 * 0.39 names memwal answers for what it has and refuses by name for what it has not: a table's branches (only
 * the main line: currentBranch() is null, list() is empty, the rest NotSupported) and createIndex's `train`
 * option (true is what memwal does; false, an empty index, is refused), and the index types 0.39 names that memwal
 * does not build (Index.fm: refused by name).
 */
import { connect, Index, InvalidInputError, NotSupportedError } from "../lib";
import { tmpDir } from "./helpers";

const rows = Array.from({ length: 300 }, (_, i) => ({ id: i, vector: [i % 7, i % 5] }));

describe("branches", () => {
  test("a table is on its main line; branch operations are refused by name", async () => {
    const db = await connect(tmpDir());
    const t = await db.createTable("t", rows);
    expect(t.currentBranch()).toBeNull();
    const b = await t.branches();
    expect(await b.list()).toEqual({});
    await expect(b.create("exp")).rejects.toThrow(/branches are not supported by memwal/);
    await expect(b.checkout("exp")).rejects.toThrow(NotSupportedError);
    await expect(b.delete("exp")).rejects.toThrow(NotSupportedError);
    await expect(b.diff("exp")).rejects.toThrow(NotSupportedError);
    t.close();
    expect(() => t.currentBranch()).toThrow("Table t is closed");
  });

  test("arguments are checked before the refusal, with 0.39's texts", async () => {
    const b = await (await (await connect(tmpDir())).createTable("t", rows)).branches();
    for (const call of [() => b.create(""), () => b.checkout(""), () => b.delete("")]) {
      await expect(call()).rejects.toThrow(InvalidInputError);
      await expect(call()).rejects.toThrow("Invalid input, branch name must be a non-empty string");
    }
    await expect(b.create("bad", "main", -1)).rejects.toThrow("from_version must be a non-negative integer");
    await expect(b.checkout("exp", 1.5)).rejects.toThrow("version must be a non-negative integer");
    await expect(b.create("ok", "main", 2)).rejects.toThrow(NotSupportedError);
  });
});

describe("createIndex(options.train)", () => {
  test("true trains on the rows present, false is refused, anything else is invalid", async () => {
    const db = await connect(tmpDir());
    const t = await db.createTable("t", rows);
    await t.createIndex("id", { config: Index.btree(), name: "id_trained", train: true });
    expect((await t.listIndices()).map((i) => i.name)).toEqual(["id_trained"]);
    await expect(t.createIndex("vector", { train: false })).rejects.toThrow(/train = false\) is not supported by memwal/);
    await expect(t.createIndex("vector", { train: "yes" as never })).rejects.toThrow(InvalidInputError);
    expect((await t.listIndices()).length).toBe(1);
  });
});

describe("index types 0.39 names and memwal does not build", () => {
  test("Index.fm exists and createIndex refuses it by name", async () => {
    const db = await connect(tmpDir());
    const t = await db.createTable("t", rows);
    await expect(t.createIndex("id", { config: Index.fm() })).rejects.toThrow(/index type FM is not supported by memwal/);
    expect(() => Index.ivfRq({ numSubVectors: 2 } as never)).toThrow(InvalidInputError);
    expect(await t.listIndices()).toEqual([]);
  });
});
