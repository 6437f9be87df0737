/**
 * The same merge-insert chain against the real bundled server on loopback,
 * through db:// — including the MemWAL path.
 */
import { type Connection, connect, type Server, serve } from "../lib";
import { ages, people, tmpDir } from "./helpers";

let server: Server;
let db: Connection;

beforeAll(async () => {
  server = await serve({ dataDir: tmpDir(), apiKey: "secret", flushIntervalMs: 200 });
  db = await connect("db://test", { apiKey: "secret", region: "local", hostOverride: server.url });
});

afterAll(async () => {
  await server.close();
});

describe("remote tables on the bundled server", () => {
  test("memWal upsert: exact counts, visible at once", async () => {
    const t = await db.createTable(
      "mw",
      people([
        [1, 10],
        [2, 20],
      ]),
    );
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .memWal()
      .execute(
        people([
          [2, 21],
          [3, 30],
        ]),
      );
    expect(r).toMatchObject({ numInsertedRows: 1, numUpdatedRows: 1, numDeletedRows: 0, numRows: 2 });
    expect(await t.countRows()).toBe(3);
    expect(await ages(t)).toEqual([
      [1, 10],
      [2, 21],
      [3, 30],
    ]);
    expect(await t.countRows("age > 20")).toBe(2);
    // Many small upserts, each visible right after it is acknowledged.
    for (let i = 0; i < 20; i++) {
      const res = await t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .memWal()
        .execute(
          people([
            [100 + i, i],
            [1, i],
          ]),
        );
      expect([res.numInsertedRows, res.numUpdatedRows]).toEqual([1, 1]);
      expect(await t.countRows()).toBe(4 + i);
    }
    // The background flush (every 200 ms here) puts the rows in the base table as a new version:
    // wait for that version (polling, up to 30 s), then the rows are all still there.
    const flushed = async () => (await t.listVersions()).some((v) => v.metadata["memwal.flushed_seq"] !== undefined);
    const start = Date.now();
    while (!(await flushed())) {
      if (Date.now() - start > 30_000) throw new Error("no MemWAL flush within 30 s");
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await t.countRows()).toBe(23);
  });

  test("the whole merge suite works remotely", async () => {
    const t = await db.createTable(
      "direct",
      people([
        [1, 10],
        [2, 0],
        [3, 30],
        [4, 40],
      ]),
    );
    let r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll({ where: "target.age > 0" })
      .whenNotMatchedInsertAll()
      .execute(
        people([
          [1, 11],
          [2, 22],
          [5, 50],
        ]),
      );
    expect([r.numUpdatedRows, r.numInsertedRows]).toEqual([1, 1]);
    r = await t
      .mergeInsert("id")
      .whenNotMatchedBySourceDelete({ where: "id > 3" })
      .execute(people([[1, 0]]));
    expect(r.numDeletedRows).toBe(2);
    expect(await ages(t)).toEqual([
      [1, 11],
      [2, 0],
      [3, 30],
    ]);
    expect(await t.version()).toBe(3);
    expect(await t.delete("id = 3")).toMatchObject({ numDeletedRows: 1 });
    expect(await t.update({ where: "id = 2", valuesSql: { age: "age + 5" } })).toMatchObject({ rowsUpdated: 1 });
    expect(await ages(t)).toEqual([
      [1, 11],
      [2, 5],
    ]);
    expect((await t.schema()).fields.map((f) => f.name)).toEqual(["id", "age", "name"]);
    expect(await db.tableNames()).toEqual(expect.arrayContaining(["direct", "mw"]));
  });

  test("checkout of an older version reads it and refuses writes; namespaces are sent as ids", async () => {
    const t = await db.createTable(
      "tt",
      people([
        [1, 10],
        [2, 20],
      ]),
    );
    await t.add(people([[3, 30]]));
    await t.delete("id = 1");
    await t.checkout(1);
    expect(await t.version()).toBe(1);
    expect(await t.countRows()).toBe(2);
    expect(await ages(t)).toEqual([
      [1, 10],
      [2, 20],
    ]);
    await expect(t.add(people([[9, 9]]))).rejects.toMatchObject({
      code: "InvalidInput",
      message: expect.stringContaining("table cannot be modified when a specific version is checked out"),
    });
    await expect(t.checkout(99)).rejects.toMatchObject({ code: "VersionNotFound" });
    await t.checkoutLatest();
    expect(await ages(t)).toEqual([
      [2, 20],
      [3, 30],
    ]);
    // The id `ns$tt` reaches the server, which names the missing namespace.
    await expect(db.openTable("tt", ["ns"])).rejects.toMatchObject({
      code: "NamespaceNotFound",
      message: expect.stringContaining('namespace "ns" does not exist'),
    });
    await expect(db.openTable("tt", ["../x"])).rejects.toMatchObject({ code: "InvalidInput" });
  });

  test("MemWAL validation fails before anything is sent, with the native messages", async () => {
    const t = await db.openTable("direct");
    await expect(
      t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .memWal()
        .execute(people([[1, 1]])),
    ).rejects.toMatchObject({
      code: "InvalidInput",
      message: "MemWAL requires when_not_matched_insert_all() to be set",
    });
  });

  test("useLsm(true) is memWal(): the MemWAL path, exact counts; useLsm(false) a direct merge", async () => {
    const t = await db.createTable("lsm", people([[1, 10]]));
    const v = await t.version();
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .useLsm(true)
      .execute(
        people([
          [1, 11],
          [2, 20],
        ]),
      );
    expect([r.numInsertedRows, r.numUpdatedRows]).toEqual([1, 1]);
    expect(await ages(t)).toEqual([
      [1, 11],
      [2, 20],
    ]);
    await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .useLsm(false)
      .execute(people([[3, 30]]));
    expect(await t.version()).toBeGreaterThan(v);
    expect(() => t.mergeInsert("id").useLsm("yes" as unknown as boolean)).toThrow(/useLsm\(enabled\) must be true or false/);
    await expect(
      t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .useLsm()
        .execute(people([[1, 1]])),
    ).rejects.toMatchObject({ code: "InvalidInput" });
  });

  test("errors: unknown table, wrong key, bad name", async () => {
    await expect(db.openTable("nope")).rejects.toMatchObject({ code: "TableNotFound" });
    const bad = await connect("db://test", { apiKey: "wrong", hostOverride: server.url, clientConfig: { retryConfig: { retries: 0 } } });
    await expect(bad.tableNames()).rejects.toMatchObject({ code: "Auth" });
    await expect(db.createTable("../x", people([[1, 1]]))).rejects.toMatchObject({ code: "InvalidInput" });
    await expect(connect("db://test", { hostOverride: server.url, apiKey: "" })).rejects.toMatchObject({ code: "InvalidInput" });
  });
});

describe("headerProvider", () => {
  test("is asked before every request and its headers replace ours", async () => {
    // The connection's own key is wrong: only the provider's x-api-key lets requests in.
    let calls = 0;
    const viaConfig = await connect("db://test", {
      apiKey: "wrong",
      hostOverride: server.url,
      clientConfig: { retryConfig: { retries: 0 }, headerProvider: async () => ({ "x-api-key": "secret", "x-call": String(++calls) }) },
    });
    expect(await viaConfig.tableNames()).toEqual(expect.arrayContaining(["mw"]));
    const t = await viaConfig.openTable("mw");
    await t.countRows();
    expect(calls).toBe(3);

    // The official client's forms: a third argument, an object with getHeaders(), a synchronous function.
    const viaArg = await connect(
      "db://test",
      { apiKey: "wrong", hostOverride: server.url },
      { getHeaders: () => ({ "x-api-key": "secret" }) },
    );
    expect(await (await viaArg.openTable("mw")).countRows()).toBeGreaterThan(0);
    // 0.39's signature connect(uri, options, session, headerProvider): the fourth argument is the provider.
    const viaFourth = await connect("db://test", { apiKey: "wrong", hostOverride: server.url }, undefined, () => ({
      "x-api-key": "secret",
    }));
    expect(await (await viaFourth.openTable("mw")).countRows()).toBeGreaterThan(0);
    // connect({ uri, ...options }), 0.39's other form.
    const viaObject = await connect({ uri: "db://test", apiKey: "secret", hostOverride: server.url });
    expect(await viaObject.tableNames()).toEqual(expect.arrayContaining(["mw"]));
    // A session (cache sizes) is refused by name, not ignored.
    await expect(connect("db://test", { apiKey: "secret", hostOverride: server.url }, { inner: {} } as never)).rejects.toMatchObject({
      code: "NotSupported",
      message: expect.stringContaining("session"),
    });

    // Without it the same connection is refused.
    const none = await connect("db://test", { apiKey: "wrong", hostOverride: server.url, clientConfig: { retryConfig: { retries: 0 } } });
    await expect(none.tableNames()).rejects.toMatchObject({ code: "Auth" });
  });

  test("a provider that throws or returns junk fails the request with a clear error", async () => {
    const throws = await connect("db://test", { apiKey: "secret", hostOverride: server.url }, () => {
      throw new Error("token service is down");
    });
    await expect(throws.tableNames()).rejects.toMatchObject({
      code: "HeaderProvider",
      message: expect.stringContaining("token service is down"),
    });
    const rejects = await connect("db://test", { apiKey: "secret", hostOverride: server.url }, async () =>
      Promise.reject(new Error("expired")),
    );
    await expect(rejects.tableNames()).rejects.toMatchObject({ code: "HeaderProvider", message: expect.stringContaining("expired") });
    const junk = await connect("db://test", { apiKey: "secret", hostOverride: server.url }, () => ({ "bad header": "x" }));
    await expect(junk.tableNames()).rejects.toMatchObject({ code: "HeaderProvider", message: expect.stringContaining("bad header name") });
    // The server is unharmed and the regular connection still works.
    expect(await db.tableNames()).toEqual(expect.arrayContaining(["mw"]));
    await expect(connect("db://test", { apiKey: "secret", hostOverride: server.url }, 42 as never)).rejects.toMatchObject({
      code: "InvalidInput",
    });
  });
});

async function pagesTableNames(d: Connection): Promise<void> {
  for (const n of ["e", "a", "c", "b", "d"]) await d.createTable(n, people([[1, 1]]));
  expect(await d.tableNames()).toEqual(["a", "b", "c", "d", "e"]);
  expect(await d.tableNames({ limit: 2 })).toEqual(["a", "b"]);
  expect(await d.tableNames({ startAfter: "b", limit: 2 })).toEqual(["c", "d"]);
  expect(await d.tableNames({ startAfter: "c" })).toEqual(["d", "e"]);
  expect(await d.tableNames({ startAfter: "e" })).toEqual([]);
  expect(await d.tableNames({ limit: 0 })).toEqual([]);
  await expect(d.tableNames({ limit: -1 })).rejects.toMatchObject({ code: "InvalidInput" });
}

describe("tableNames({ startAfter, limit })", () => {
  test("on a folder database", async () => pagesTableNames(await connect(tmpDir())));
  test("on a served database (GET /v1/table/ with limit and page_token)", async () => {
    const s = await serve({ dataDir: tmpDir(), apiKey: "secret" });
    try {
      await pagesTableNames(await connect("db://test", { apiKey: "secret", region: "local", hostOverride: s.url }));
    } finally {
      await s.close();
    }
  });
});

describe("connect options memwal does not honour are refused, never ignored", () => {
  const base = { apiKey: "k", region: "local", hostOverride: "http://127.0.0.1:9" };
  test.each([
    [{ clientConfig: { fooBar: 1 } }, /unknown field `fooBar`/],
    [{ clientConfig: { retryConfig: { retry: 3 } } }, /unknown field `retry`/],
    [{ clientConfig: { timeoutConfig: { timeoutSecs: 3 } } }, /unknown field `timeoutSecs`/],
    [{ clientConfig: { tlsConfig: { caFile: "x" } } }, /unknown field `caFile`/],
  ])("%j is InvalidInput naming the key", async (extra, message) => {
    await expect(connect("db://x", { ...base, ...extra } as never)).rejects.toMatchObject({ code: "InvalidInput", message });
  });
  test.each(["manifestEnabled", "namespaceClientProperties"])("0.39's %s is NotSupported by name", async (key) => {
    await expect(connect("db://x", { ...base, [key]: true } as never)).rejects.toMatchObject({
      code: "NotSupported",
      message: expect.stringContaining(key),
    });
  });
});
