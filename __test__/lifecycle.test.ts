/**
 * isOpen / close / display of Connection and Table, with @lancedb/lancedb 0.39's answers and error texts, on a
 * local folder, memory and a table of the real bundled server.
 */
import { inspect } from "node:util";
import { type Connection, connect, InvalidInputError, type Server, serve } from "../lib";
import { tmpDir } from "./helpers";

let server: Server;

beforeAll(async () => {
  server = await serve({ dataDir: tmpDir(), apiKey: "k", flushIntervalMs: 60_000 });
});

afterAll(async () => {
  await server.close();
});

const rows = () => [
  { id: 1n, vector: [1, 2] },
  { id: 2n, vector: [3, 4] },
];

let served = 0;
const kinds: Array<[string, () => Promise<{ db: Connection; dbDisplay: string; tableDisplay: (n: string) => string }>]> = [
  [
    "local folder",
    async () => {
      const dir = tmpDir();
      return {
        db: await connect(dir),
        dbDisplay: `ListingDatabase(uri=${dir}, read_consistency_interval=None)`,
        tableDisplay: (n) => `NativeTable(${n}, uri=${dir}/${n}, read_consistency_interval=None)`,
      };
    },
  ],
  [
    "memory",
    async () => ({
      db: await connect("memory://"),
      dbDisplay: "ListingDatabase(uri=memory://, read_consistency_interval=None)",
      tableDisplay: (n) => `NativeTable(${n}, uri=memory://${n}, read_consistency_interval=None)`,
    }),
  ],
  [
    "served",
    async () => {
      // Table names differ per connection: they share the server.
      const db = await connect("db://test", { apiKey: "k", region: "local", hostOverride: server.url });
      const prefix = `s${++served}_`;
      const wrapped = new Proxy(db, {
        get(target, prop, receiver) {
          const v = Reflect.get(target, prop, receiver);
          if (typeof v !== "function") return v;
          if (["createTable", "openTable", "dropTable"].includes(String(prop)))
            return (name: string, ...rest: unknown[]) => v.call(target, prefix + name, ...rest);
          return v.bind(target);
        },
      });
      return { db: wrapped, dbDisplay: `RemoteDatabase(host=${server.url})`, tableDisplay: (n) => `RemoteTable(${prefix}${n})` };
    },
  ],
];

describe.each(kinds)("%s", (_kind, make) => {
  test("display() of a connection and its tables, also through util.inspect", async () => {
    const { db, dbDisplay, tableDisplay } = await make();
    expect(db.display()).toBe(dbDisplay);
    expect(inspect(db)).toBe(dbDisplay);
    const t = await db.createTable("d", rows());
    expect(t.display()).toBe(tableDisplay("d"));
    expect(inspect(t)).toBe(tableDisplay("d"));
    expect((await db.openTable("d")).display()).toBe(tableDisplay("d"));
  });

  test("Table.close(): 0.39's errors after, builders throw at once, other handles and earlier queries unaffected", async () => {
    const { db } = await make();
    const t = await db.createTable("c", rows());
    const other = await db.openTable("c");
    const before = t.query().select(["id"]);
    expect(t.isOpen()).toBe(true);
    t.close();
    expect(t.isOpen()).toBe(false);
    expect(t.name).toMatch(/c$/);
    expect(t.display()).toBe(`ClosedTable(${t.name})`);
    const closed = `Table ${t.name} is closed`;
    for (const f of [
      () => t.countRows(),
      () => t.schema(),
      () => t.add([{ id: 3n, vector: [5, 6] }]),
      () => t.version(),
      () => t.listIndices(),
      () => t.delete("id = 1"),
      () => t.update({ values: { id: 5n } }),
      () => t.toArrow(),
      () => t.tags(),
      () => t.checkout(1),
      () => t.listVersions(),
      () => t.stats(),
    ]) {
      await expect(f()).rejects.toThrow(closed);
    }
    await expect(t.countRows()).rejects.toBeInstanceOf(InvalidInputError);
    for (const f of [
      () => t.query(),
      () => t.search([1, 2]),
      () => t.vectorSearch([1, 2]),
      () => t.mergeInsert("id"),
      () => t.takeOffsets([0]),
    ]) {
      expect(f).toThrow(closed);
    }
    expect((await before.toArray()).length).toBe(2);
    expect(await other.countRows()).toBe(2);
    expect(other.isOpen()).toBe(true);
    t.close();
    expect(t.isOpen()).toBe(false);
  });

  test("Connection.close(): 'Connection is closed' after, its tables stay open", async () => {
    const { db } = await make();
    const t = await db.createTable("k", rows());
    expect(db.isOpen()).toBe(true);
    db.close();
    expect(db.isOpen()).toBe(false);
    const closed = "Connection is closed";
    let embedded = false;
    for (const f of [
      () => db.tableNames(),
      () => db.openTable("k"),
      () => db.createTable("k2", rows()),
      () => db.dropTable("k"),
      () => db.renameTable("k", "k3"),
      () => db.listNamespaces(),
      () =>
        db.createTable("k4", [{ text: "a" }], {
          embeddingFunction: {
            function: {
              computeSourceEmbeddings: async () => {
                embedded = true;
                return [[1]];
              },
            } as never,
            sourceColumn: "text",
          },
        }),
    ]) {
      await expect(f()).rejects.toThrow(closed);
    }
    expect(embedded).toBe(false);
    expect(() => db.display()).toThrow(closed);
    expect(t.isOpen()).toBe(true);
    expect(await t.countRows()).toBe(2);
    db.close();
    expect(db.isOpen()).toBe(false);
  });
});

test("a remote connection without hostOverride displays LanceDB Cloud's host for its region", async () => {
  expect((await connect("db://mydb", { apiKey: "k" })).display()).toBe("RemoteDatabase(host=https://mydb.us-east-1.api.lancedb.com)");
  expect((await connect("db://mydb", { apiKey: "k", region: "eu-west-1" })).display()).toBe(
    "RemoteDatabase(host=https://mydb.eu-west-1.api.lancedb.com)",
  );
});

test("a remote table in a namespace displays its id, the path and name joined by $", async () => {
  const db = await connect("db://test", { apiKey: "k", hostOverride: server.url });
  await db.createNamespace(["dns"], { mode: "exist_ok" });
  const t = await db.createTable("u", rows(), { namespace: ["dns"] });
  expect(t.display()).toBe("RemoteTable(dns$u)");
  expect((await db.openTable("u", ["dns"])).display()).toBe("RemoteTable(dns$u)");
});
