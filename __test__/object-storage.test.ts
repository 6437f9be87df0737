/**
 * Tables on an object store, through the real addon: `connect("s3://...", { storageOptions })` for a
 * local database and `serve({ data: "s3://...", dataDir })` for the server (WALs in dataDir), against
 * moto_server's S3 API on 127.0.0.1 (scripts/moto.sh; scripts/test.sh installs moto into .venv-compat,
 * and a missing moto fails this suite, it never skips). The official Node client talks to the
 * S3-backed server as to any other. With `wal` on S3 too, a server started elsewhere takes a table over.
 */

import * as path from "node:path";
import { connect, MemwalError, type Server, serve } from "../lib";
import { s3TestEndpoint, s3TestOptions, s3TestUri, tmpDir } from "./helpers";

const root = path.join(__dirname, "..");
const s3Uri = s3TestUri;
const storageOptions = s3TestOptions;

beforeAll(() => {
  expect(s3TestEndpoint()).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
});

const rows = (ids: number[], v: number) => ids.map((id) => ({ id, v, vector: [id, v, 1] }));

describe("a local database on S3", () => {
  test("create, add, upsert, search, optimize; a new connection sees it all; drop removes it", async () => {
    const uri = s3Uri("local");
    const db = await connect(uri, { storageOptions: storageOptions() });
    const t = await db.createTable("t", rows([1, 2, 3], 0));
    await t.add(rows([4], 0));
    const r = await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute(rows([3, 5], 7));
    expect([r.numUpdatedRows, r.numInsertedRows]).toEqual([1, 1]);
    await t.delete("id = 1");
    const hit = await t.search([5, 7, 1]).limit(1).toArray();
    expect(Number(hit[0].id)).toBe(5);
    const stats = await t.optimize({ cleanupOlderThan: new Date(Date.now() + 1000), deleteUnverified: true });
    expect(stats.prune.oldVersionsRemoved).toBeGreaterThan(0);

    const again = await connect(uri, { storageOptions: storageOptions() });
    expect(await again.tableNames()).toEqual(["t"]);
    const t2 = await again.openTable("t");
    const got = (await t2.query().toArray()).map((x) => [Number(x.id), Number(x.v)]).sort((a, b) => a[0] - b[0]);
    expect(got).toEqual([
      [2, 0],
      [3, 7],
      [4, 0],
      [5, 7],
    ]);
    await again.dropTable("t");
    expect(await db.tableNames()).toEqual([]);
  });

  test("an option the store does not read, or options on a folder, are refused by name", async () => {
    const bad = { ...storageOptions(), aws_regoin: "x" };
    await expect(connect(s3Uri("bad"), { storageOptions: bad })).rejects.toThrow(/aws_regoin/);
    await expect(connect(tmpDir(), { storageOptions: storageOptions() })).rejects.toThrow(/do not apply to a database on local disk/);
    const e = await connect(tmpDir(), { storageOptions: { aws_region: "x" } }).catch((x) => x);
    expect(e).toBeInstanceOf(MemwalError);
  });
});

describe("a server whose tables are on S3", () => {
  let server: Server;
  const uri = s3Uri("served");
  const walDir = tmpDir();
  const start = () => serve({ dataDir: walDir, data: uri, storageOptions: storageOptions(), apiKey: "k", flushRows: 50 });
  beforeAll(async () => {
    server = await start();
  });
  afterAll(async () => server.close());

  test("memWal upserts are read at once, survive a restart, and land in the bucket", async () => {
    const db = await connect("db://s3", { apiKey: "k", hostOverride: server.url });
    const t = await db.createTable("t", rows([0], 0));
    for (let i = 1; i <= 120; i++) {
      await t
        .mergeInsert("id")
        .whenMatchedUpdateAll()
        .whenNotMatchedInsertAll()
        .memWal()
        .execute(rows([i, 1000 + (i % 7)], i));
    }
    expect(await t.countRows()).toBe(128);
    await server.close();
    server = await start();
    const t2 = await (await connect("db://s3", { apiKey: "k", hostOverride: server.url })).openTable("t");
    expect(await t2.countRows()).toBe(128);
    const v = new Map((await t2.query().toArray()).map((x) => [Number(x.id), Number(x.v)]));
    for (let k = 1; k <= 120; k++) expect(v.get(k)).toBe(k);
    for (let k = 0; k < 7; k++) expect(v.get(1000 + k)).toBe(lastWrite(k));
    // The base table is on S3: a local database over the same prefix reads what was flushed.
    const direct = await (await connect(uri, { storageOptions: storageOptions() })).openTable("t");
    expect(await direct.countRows()).toBeGreaterThan(0);
  });

  test("the official @lancedb/lancedb 0.39 client works against it", async () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const lancedb = require(path.join(root, "bench", "node_modules", "@lancedb", "lancedb"));
    const db = await lancedb.connect("db://s3", { apiKey: "k", region: "us-east-1", hostOverride: server.url });
    const t = await db.createTable("official", [
      { id: 1, s: "a" },
      { id: 2, s: "b" },
    ]);
    await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .execute([
        { id: 2, s: "B" },
        { id: 3, s: "c" },
      ]);
    const got = (await t.query().toArray()).map((x: { id: number; s: string }) => [Number(x.id), x.s]).sort();
    expect(got).toEqual([
      [1, "a"],
      [2, "B"],
      [3, "c"],
    ]);
  });
});

describe("a server whose WAL is on S3 too (serve({ wal }))", () => {
  test("a server on another machine takes the table over with every acknowledged row; the first is fenced", async () => {
    const prefix = s3Uri("walS3");
    // Nothing is flushed by row count: the acknowledged rows live only in the WAL objects.
    const on = (dataDir: string) =>
      serve({
        dataDir,
        data: `${prefix}/data`,
        wal: `${prefix}/wal`,
        storageOptions: storageOptions(),
        apiKey: "k",
        flushRows: 1_000_000,
      });
    const a = await on(tmpDir());
    try {
      const ta = await (await connect("db://a", { apiKey: "k", hostOverride: a.url })).createTable("t", rows([0], 0));
      for (let i = 1; i <= 40; i++) {
        await ta
          .mergeInsert("id")
          .whenMatchedUpdateAll()
          .whenNotMatchedInsertAll()
          .memWal()
          .execute(rows([i, 100], i));
      }
      // A second server with an empty local folder: the first machine's disk is gone, not its bucket.
      const b = await on(tmpDir());
      try {
        const tb = await (await connect("db://b", { apiKey: "k", hostOverride: b.url })).openTable("t");
        await tb
          .mergeInsert("id")
          .whenMatchedUpdateAll()
          .whenNotMatchedInsertAll()
          .memWal()
          .execute(rows([41], 41));
        const v = new Map((await tb.query().toArray()).map((x) => [Number(x.id), Number(x.v)]));
        expect(v.size).toBe(43);
        for (let k = 1; k <= 41; k++) expect(v.get(k)).toBe(k);
        expect(v.get(100)).toBe(40);
        // The first server's next write meets the second one's fence: an error, and nothing lands.
        const stale = ta
          .mergeInsert("id")
          .whenMatchedUpdateAll()
          .whenNotMatchedInsertAll()
          .memWal()
          .execute(rows([7], -7));
        await expect(stale).rejects.toThrow(/taken the table over|another server/);
        expect(Number((await tb.query().where("id = 7").toArray())[0].v)).toBe(7);
      } finally {
        await b.close();
      }
    } finally {
      await a.close().catch(() => undefined);
    }
  });

  test("a WAL on S3 needs the tables on an object store too, and its own prefix", async () => {
    const uri = s3Uri("walAlone");
    await expect(serve({ dataDir: tmpDir(), wal: uri, apiKey: "k" })).rejects.toThrow(/wal/i);
    await expect(serve({ dataDir: tmpDir(), data: uri, wal: uri, storageOptions: storageOptions(), apiKey: "k" })).rejects.toThrow(
      /prefix of their own/,
    );
  });
});

/** The value the upsert loop above last wrote for key 1000 + `k`. */
function lastWrite(k: number): number {
  let last = -1;
  for (let i = 1; i <= 120; i++) if (i % 7 === k) last = i;
  return last;
}

describe("readConsistencyInterval (LanceDB's option), on S3 where each check is a request", () => {
  test("reads see another connection's write at once by default, after the interval when one is set", async () => {
    const uri = s3Uri("consistency");
    const writer = await connect(uri, { storageOptions: storageOptions() });
    await writer.createTable("t", rows([1], 0));
    const strong = await (await connect(uri, { storageOptions: storageOptions() })).openTable("t");
    const lagging = await (await connect(uri, { storageOptions: storageOptions(), readConsistencyInterval: 0.5 })).openTable("t");
    expect([await strong.countRows(), await lagging.countRows()]).toEqual([1, 1]);
    await (await writer.openTable("t")).add(rows([2], 0));
    expect(await strong.countRows()).toBe(2);
    expect(await lagging.countRows()).toBe(1);
    await new Promise((r) => setTimeout(r, 600));
    expect(await lagging.countRows()).toBe(2);
    expect(lagging.display()).toMatch(/read_consistency_interval=500ms/);
    await expect(connect(uri, { readConsistencyInterval: -1 })).rejects.toThrow(/readConsistencyInterval/);
  });
});
