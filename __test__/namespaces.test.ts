/**
 * Namespaces on the real bundled server through our remote client (and the official Node client): create, list
 * (paged), describe, drop (restrict and cascade); tables created, listed, written (memWal rows included),
 * renamed and dropped inside them, surviving a restart; a local database refuses namespaces by name.
 */
import { connect, InvalidInputError, NotSupportedError, serve } from "../lib";
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

test("a local database has only the root namespace, and says so", async () => {
  const db = await connect(tmpDir());
  expect(await db.listNamespaces()).toEqual({ namespaces: [] });
  await expect(db.createNamespace(["ns"])).rejects.toThrow(NotSupportedError);
  await expect(db.tableNames(["ns"])).rejects.toThrow(NotSupportedError);
});
