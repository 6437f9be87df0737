/**
 * Query.outputSchema() and Connection.dropAllTables(), as @lancedb/lancedb 0.39's, on local, memory and served
 * tables.
 */
import { connect, NotSupportedError } from "../lib";
import { tableKinds, tmpDir } from "./helpers";

const { kinds, remote } = tableKinds();

const fields = (s: import("apache-arrow").Schema) => s.fields.map((f) => `${f.name}:${f.type}`);
let n = 0;

describe.each(kinds)("outputSchema on %s", (_kind, make) => {
  test("is the schema the query answers with: projection, _rowid, _distance, query_index", async () => {
    const db = await make();
    const t = await db.createTable(`os${++n}`, [
      { id: 1n, name: "a", vector: [1, 2] },
      { id: 2n, name: "b", vector: [3, 4] },
    ]);
    const queries = [
      t.query(),
      t.query().select(["name"]),
      t.query().select({ y: "id * 2" }),
      t.query().withRowId().where("id > 100"),
      t.query().limit(1).offset(5),
      t.search([1, 2]),
      t.search([1, 2]).select(["id"]).where("id = 2"),
      t.vectorSearch([
        [1, 2],
        [2, 3],
      ]),
    ];
    for (const q of queries) {
      const s = await q.outputSchema();
      expect(fields(s)).toEqual(fields((await q.toArrow()).schema));
    }
    expect(fields(await t.query().select(["name"]).outputSchema())).toEqual(["name:Utf8"]);
    expect(fields(await t.search([1, 2]).select(["id"]).outputSchema())).toEqual(["id:Int64", "_distance:Float32"]);
    expect(fields(await t.query().withRowId().outputSchema())).toContain("_rowid:Uint64");
    // Nothing returned means nothing changed: the rows are all there.
    expect(await t.countRows()).toBe(2);
  });

  test("refuses what running the query would refuse", async () => {
    const db = await make();
    const t = await db.createTable(`os${++n}`, [{ id: 1n, vector: [1, 2] }]);
    await expect(t.query().select(["nope"]).outputSchema()).rejects.toMatchObject({ code: "InvalidInput" });
    await expect(t.search([1, 2]).where("nope > 1").outputSchema()).rejects.toMatchObject({ code: "InvalidInput" });
  });
});

describe.each(kinds.filter(([k]) => k !== "served"))("dropAllTables on %s", (_kind, make) => {
  test("drops every table of the root", async () => {
    const db = await make();
    for (let i = 0; i < 12; i++) await db.createTable(`d${i}`, [{ id: BigInt(i) }]);
    await db.dropAllTables();
    expect(await db.tableNames()).toEqual([]);
    await expect(db.openTable("d3")).rejects.toMatchObject({ code: "TableNotFound" });
    // The names are free again.
    await db.createTable("d3", [{ id: 1n }]);
    await db.dropAllTables([]);
    expect(await db.tableNames()).toEqual([]);
    await db.dropAllTables();
    // A namespace path drops that namespace's tables only; a missing namespace is NamespaceNotFound, nothing dropped.
    await db.createTable("kept", [{ id: 1n }]);
    await expect(db.dropAllTables(["ns"])).rejects.toMatchObject({ code: "NamespaceNotFound", message: expect.stringContaining("ns") });
    await db.createNamespace(["ns"]);
    await db.createTable("inner", [{ id: 1n }], { namespace: ["ns"] });
    await db.dropAllTables(["ns"]);
    expect(await db.tableNames(["ns"])).toEqual([]);
    expect(await db.tableNames()).toEqual(["kept"]);
  });
});

test("dropAllTables on a remote database is refused as 0.39 refuses it", async () => {
  const db = remote();
  await db.createTable("kept", [{ id: 1n }]);
  const e = await db.dropAllTables().catch((x) => x);
  expect(e).toBeInstanceOf(NotSupportedError);
  expect(e.message).toContain("dropAllTables");
  expect(e.message).toContain("Dropping all tables is not currently supported in the remote API");
  expect(await db.tableNames()).toContain("kept");
});

test("dropAllTables on a closed connection says it is closed", async () => {
  const db = await connect(tmpDir());
  db.close();
  await expect(db.dropAllTables()).rejects.toThrow("Connection is closed");
});
