/**
 * Namespaces on the real bundled server through our remote client (and the official Node client): create, list
 * (paged), describe, drop (restrict and cascade); tables created, listed, written (memWal rows included),
 * renamed and dropped inside them, surviving a restart; the same on a local folder and memory:// (one layout with the
 * server's), `connectNamespace("dir")` and 0.39's `manifest_enabled` switch.
 */
import { connect, connectNamespace, InvalidInputError, NotSupportedError, serve } from "../lib";
import { tmpDir } from "./helpers";

test("namespaces on the server: create, list, describe, tables inside, drop; they survive a restart", async () => {
  const dataDir = tmpDir();
  let server = await serve({ dataDir, apiKey: "k", flushIntervalMs: 60_000 });
  try {
    let db = await connect("db://test", { apiKey: "k", region: "local", hostOverride: server.url });
    await db.createNamespace(["prod"], { properties: { owner: "ops" } });
    await db.createNamespace(["prod", "eu"]);
    await db.createNamespace(["dev"]);
    await db.createNamespace(["dev"], { mode: "exist_ok" });
    await expect(db.createNamespace(["dev"])).rejects.toThrow(/already exists/);
    await expect(db.createNamespace(["nope", "x"])).rejects.toThrow(/does not exist/);
    expect(await db.listNamespaces()).toEqual({ namespaces: ["dev", "prod"] });
    expect(await db.listNamespaces([], { limit: 1 })).toEqual({ namespaces: ["dev"], pageToken: "dev" });
    expect(await db.listNamespaces([], { pageToken: "dev" })).toEqual({ namespaces: ["prod"] });
    expect(await db.listNamespaces(["prod"])).toEqual({ namespaces: ["eu"] });
    expect(await db.describeNamespace(["prod"])).toEqual({ properties: { owner: "ops" } });

    // Tables inside: the same name in two namespaces and the root are three tables.
    const t = await db.createTable("events", [{ id: 1, v: 1 }], { namespace: ["prod"] });
    await db.createTable("events", [{ id: 9, v: 9 }]);
    await db.createTable("events", [{ id: 5, v: 5 }], { namespace: ["prod", "eu"] });
    await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .memWal()
      .execute([{ id: 2, v: 2 }]);
    expect(await db.tableNames(["prod"])).toEqual(["events"]);
    expect(await db.tableNames()).toEqual(["events"]);
    expect(await (await db.openTable("events", ["prod"])).countRows()).toBe(2);
    expect(await (await db.openTable("events", ["prod", "eu"])).countRows()).toBe(1);
    expect(await (await db.openTable("events")).countRows()).toBe(1);
    await expect(db.openTable("events", ["dev"])).rejects.toThrow();
    await expect(db.tableNames(["nope"])).rejects.toThrow(/does not exist/);

    // A restart (buffered rows not flushed) keeps the namespaces, their tables and acknowledged rows.
    await server.close();
    server = await serve({ dataDir, apiKey: "k", flushIntervalMs: 60_000 });
    db = await connect("db://test", { apiKey: "k", region: "local", hostOverride: server.url });
    expect(await db.listNamespaces()).toEqual({ namespaces: ["dev", "prod"] });
    expect(await (await db.openTable("events", ["prod"])).countRows()).toBe(2);

    // Renames as the official clients send them: the new name alone, in the table's namespace.
    await db.renameTable("events", "ev2", { namespacePath: ["prod", "eu"] });
    expect(await db.tableNames(["prod", "eu"])).toEqual(["ev2"]);
    expect(await (await db.openTable("ev2", ["prod", "eu"])).countRows()).toBe(1);
    await expect(db.renameTable("ev2", "ev3", { namespacePath: ["prod", "eu"], newNamespacePath: ["dev"] })).rejects.toThrow();
    expect(await db.tableNames(["prod", "eu"])).toEqual(["ev2"]);

    await expect(db.dropNamespace(["prod"])).rejects.toThrow(/not empty/);
    await db.dropNamespace(["prod"], { behavior: "cascade" });
    expect(await db.listNamespaces()).toEqual({ namespaces: ["dev"] });
    await expect(db.openTable("events", ["prod"])).rejects.toThrow();
    await expect(db.dropNamespace(["prod"])).rejects.toThrow(/does not exist/);
    await expect(db.dropNamespace(["prod"])).rejects.toMatchObject({ code: "NamespaceNotFound" });
    await db.dropNamespace(["prod"], { mode: "skip" });
    await db.dropNamespace(["dev"]);
    expect(await (await db.openTable("events")).countRows()).toBe(1);
    await expect(db.createNamespace(["bad/name"])).rejects.toThrow(InvalidInputError);
  } finally {
    await server.close();
  }
});

describe.each([
  ["folder", () => tmpDir()],
  ["memory", () => "memory://"],
])("namespaces on a local database (%s)", (_kind, where) => {
  test("create, list (paged), describe, tables inside, drop (restrict and cascade)", async () => {
    const uri = where();
    const db = await connect(uri);
    expect(await db.listNamespaces()).toEqual({ namespaces: [] });
    await db.createNamespace(["prod"], { properties: { owner: "ops" } });
    await db.createNamespace(["prod", "eu"]);
    await db.createNamespace(["dev"]);
    await db.createNamespace(["dev"], { mode: "exist_ok" });
    await expect(db.createNamespace(["dev"])).rejects.toThrow(/already exists/);
    await expect(db.createNamespace(["nope", "x"])).rejects.toMatchObject({ code: "NamespaceNotFound" });
    expect(await db.listNamespaces()).toEqual({ namespaces: ["dev", "prod"] });
    expect(await db.listNamespaces([], { limit: 1 })).toEqual({ namespaces: ["dev"], pageToken: "dev" });
    expect(await db.listNamespaces([], { pageToken: "dev" })).toEqual({ namespaces: ["prod"] });
    expect(await db.listNamespaces(["prod"])).toEqual({ namespaces: ["eu"] });
    expect(await db.describeNamespace(["prod"])).toEqual({ properties: { owner: "ops" } });
    await expect(db.describeNamespace(["does-not-exist"])).rejects.toThrow(/not found/i);

    // The same name in two namespaces and the root are three tables.
    const t = await db.createTable("events", [{ id: 1, v: 1 }], { namespace: ["prod"] });
    await db.createTable("events", [{ id: 9, v: 9 }]);
    await db.createTable("events", [{ id: 5, v: 5 }], { namespace: ["prod", "eu"] });
    await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([{ id: 2, v: 2 }]);
    expect(await db.tableNames(["prod"])).toEqual(["events"]);
    expect(await db.tableNames()).toEqual(["events"]);
    expect(await (await db.openTable("events", ["prod"])).countRows()).toBe(2);
    expect(await (await db.openTable("events", ["prod", "eu"])).countRows()).toBe(1);
    expect(await (await db.openTable("events")).countRows()).toBe(1);
    await expect(db.openTable("events", ["dev"])).rejects.toMatchObject({ code: "TableNotFound" });
    await expect(db.tableNames(["nope"])).rejects.toMatchObject({ code: "NamespaceNotFound" });

    // Restrict refuses a namespace holding anything and removes nothing; cascade takes it all.
    await expect(db.dropNamespace(["prod"])).rejects.toThrow(/not empty: it holds 1 tables and 1 namespaces/);
    expect(await (await db.openTable("events", ["prod", "eu"])).countRows()).toBe(1);
    await db.dropNamespace(["prod"], { behavior: "cascade" });
    expect(await db.listNamespaces()).toEqual({ namespaces: ["dev"] });
    await expect(db.openTable("events", ["prod"])).rejects.toMatchObject({ code: "NamespaceNotFound" });
    await expect(db.dropNamespace(["prod"])).rejects.toMatchObject({ code: "NamespaceNotFound" });
    await db.dropNamespace(["prod"], { mode: "skip" });
    // A namespace made again is empty: nothing of the dropped one comes back.
    await db.createNamespace(["prod"]);
    expect(await db.tableNames(["prod"])).toEqual([]);
    expect(await db.listNamespaces(["prod"])).toEqual({ namespaces: [] });
    await db.dropNamespace(["dev"]);
    expect(await (await db.openTable("events")).countRows()).toBe(1);
    // A rename stays in the table's namespace; a move to another one is refused, nothing moved.
    await db.createTable("r1", [{ id: 1 }], { namespace: ["prod"] });
    await db.renameTable("r1", "r2", { namespacePath: ["prod"] });
    expect(await db.tableNames(["prod"])).toEqual(["r2"]);
    await db.renameTable("r2", "r3", { namespacePath: ["prod"], newNamespacePath: [] });
    await expect(db.renameTable("r3", "r4", { namespacePath: ["prod"], newNamespacePath: ["other"] })).rejects.toThrow(NotSupportedError);
    expect(await db.tableNames(["prod"])).toEqual(["r3"]);
    expect(await db.tableNames()).toEqual(["events"]);
    await expect(db.createNamespace(["bad/name"])).rejects.toThrow(InvalidInputError);
    await expect(db.createNamespace([])).rejects.toThrow(/root namespace always exists/);
    await expect(db.createNamespace(["x"], { mode: "frobnicate" as never })).rejects.toThrow(/Invalid mode 'frobnicate'/);
    await expect(db.dropNamespace(["prod"], { mode: "frobnicate" as never })).rejects.toThrow(/Invalid mode 'frobnicate'/);
    await expect(db.dropNamespace(["prod"], { behavior: "frobnicate" as never })).rejects.toThrow(/Invalid behavior 'frobnicate'/);
  });
});

test("a folder's namespaces outlive the connection and are the server's: one layout", async () => {
  const dataDir = tmpDir();
  let db = await connect(dataDir);
  await db.createNamespace(["team"], { properties: { k: "v" } });
  await db.createTable("t", [{ id: 1 }, { id: 2 }], { namespace: ["team"] });
  db = await connect(dataDir);
  expect(await db.listNamespaces()).toEqual({ namespaces: ["team"] });
  expect(await (await db.openTable("t", ["team"])).countRows()).toBe(2);
  const server = await serve({ dataDir, apiKey: "k", flushIntervalMs: 60_000 });
  try {
    const served = await connect("db://test", { apiKey: "k", region: "local", hostOverride: server.url });
    expect(await served.listNamespaces()).toEqual({ namespaces: ["team"] });
    expect(await served.describeNamespace(["team"])).toEqual({ properties: { k: "v" } });
    expect(await (await served.openTable("t", ["team"])).countRows()).toBe(2);
  } finally {
    await server.close();
  }
});

test("manifest_enabled false turns child namespaces off, as in 0.39; other properties are refused by name", async () => {
  const uri = tmpDir();
  const on = await connect(uri, { namespaceClientProperties: { manifest_enabled: "true" } });
  await on.createNamespace(["a"]);
  const off = await connect(uri, { manifestEnabled: false });
  await expect(off.createNamespace(["b"])).rejects.toThrow(NotSupportedError);
  expect(await off.listNamespaces()).toEqual({ namespaces: ["a"] });
  await expect(connect(uri, { namespaceClientProperties: { dir_listing_enabled: "true" } })).rejects.toThrow(/dir_listing_enabled/);
  await expect(connect(uri, { namespaceClientProperties: { manifest_enabled: "yes" } })).rejects.toThrow(/"true" or "false"/);
});

test("connectNamespace('dir') opens the folder; other implementations and properties are refused by name", async () => {
  const root = tmpDir();
  await expect(connectNamespace("", {})).rejects.toThrow("implName must be a non-empty string");
  await expect(connectNamespace("rest", { root })).rejects.toThrow(NotSupportedError);
  await expect(connectNamespace("dir", {})).rejects.toThrow(/needs a root/);
  await expect(connectNamespace("dir", { root, extraProperties: { inline_optimization_enabled: "true" } })).rejects.toThrow(
    /inline_optimization_enabled/,
  );
  const w = await connectNamespace("dir", { root, manifestEnabled: true });
  await w.createNamespace(["analytics"]);
  await w.createTable("orders", [{ id: 1 }, { id: 2 }], ["analytics"]);
  await w.createTable("orders2", [{ id: 1 }], { namespace: ["analytics"] });
  const r = await connectNamespace("dir", { extraProperties: { root } });
  expect(await r.tableNames(["analytics"])).toEqual(["orders", "orders2"]);
  expect(await (await r.openTable("orders", ["analytics"])).countRows()).toBe(2);
  // The typed root wins over extraProperties.root; manifest_enabled "false" (extra or top level) turns child namespaces off.
  const typed = await connectNamespace("dir", { root, extraProperties: { root: "/nowhere", manifest_enabled: "false" } });
  await typed.createTable("base", [{ id: 1 }]);
  expect(await (await connect(root)).tableNames()).toContain("base");
  await expect(typed.createNamespace(["x"])).rejects.toThrow(NotSupportedError);
  const top = await connectNamespace("dir", { root, manifest_enabled: "false" });
  await expect(top.createNamespace(["y"])).rejects.toThrow(NotSupportedError);
});
