/**
 * Embedding functions (`memwal/embedding`, as @lancedb/lancedb/embedding 0.39) on the real addon: a registered
 * function fills the vector column on create / add / mergeInsert (the MemWAL path on the served table) and embeds
 * `search("text")`, on local, memory and served tables; what a reopened table still knows; errors that name what
 * is wrong and write nothing; the `openai` provider against a fake OpenAI-compatible endpoint on 127.0.0.1.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";
import { Field, FixedSizeList, Float32, Int64, Schema, tableFromArrays, tableToIPC, Utf8 } from "apache-arrow";
import {
  AuthError,
  type Connection,
  connect,
  type embedding,
  HttpError,
  InvalidInputError,
  NotSupportedError,
  type Server,
  serve,
  type Table,
} from "../lib";
import { convertToTable, fromDataToBuffer, makeArrowTable, tableFromIPC } from "../lib/arrow-api";
import { EmbeddingFunction, getRegistry, LanceSchema, register, TextEmbeddingFunction } from "../lib/embedding";
import { tmpDir } from "./helpers";

/** Every text each Letters function embedded, in order (source and query embeddings alike). */
const embedded: string[] = [];

/** A deterministic embedding: [a's, e's, length] of the text, times `scale` (an option recorded with the table);
 * this class itself is never registered (recorded by its class name). */
class Scaled extends TextEmbeddingFunction<{ scale?: number }> {
  readonly scale: number;
  constructor(options: { scale?: number } = {}) {
    super();
    this.scale = this.resolveVariables(options).scale ?? 1;
  }
  ndims(): number {
    return 3;
  }
  async generateEmbeddings(texts: string[]): Promise<number[][]> {
    return texts.map((t) => letters(t, this.scale));
  }
}

/** Scaled, registered as "letters", recording every text it embeds in `embedded`. */
@register("letters")
class Letters extends Scaled {
  async generateEmbeddings(texts: string[]): Promise<number[][]> {
    embedded.push(...texts);
    return super.generateEmbeddings(texts);
  }
}

function letters(t: string, scale = 1): number[] {
  const n = (c: string) => [...t].filter((x) => x === c).length;
  return [n("a") * scale, n("e") * scale, t.length * scale];
}

/** A function whose answers are wrong on purpose: `mode` says how. */
class Broken extends EmbeddingFunction<string, { mode?: "dims" | "throw" | "count" }> {
  readonly mode: string;
  constructor(options: { mode?: "dims" | "throw" | "count" } = {}) {
    super();
    this.mode = options.mode ?? "dims";
  }
  embeddingDataType() {
    return new Float32();
  }
  async computeSourceEmbeddings(data: string[]): Promise<number[][]> {
    if (this.mode === "throw") throw brokenError;
    if (this.mode === "count") return [[1, 2, 3]];
    return data.map(() => [1, 2, 3, 4]);
  }
}
const brokenError = new Error("the model is down");
getRegistry().register("broken")(Broken);

/** A function that is never registered. */
class Unregistered extends TextEmbeddingFunction {
  async generateEmbeddings(texts: string[]): Promise<number[][]> {
    return texts.map((t) => letters(t));
  }
}

const fruit = () => [
  { id: 1n, text: "banana" },
  { id: 2n, text: "cherry" },
  { id: 3n, text: "apple tree" },
];

/** id -> [text, vector] of every row, sorted by id. */
async function rows(t: Table): Promise<Array<[number, string, number[] | null]>> {
  const out = (await t.query().toArray()).map((r): [number, string, number[] | null] => [
    Number(r.id),
    String(r.text),
    r.vector === null ? null : Array.from(r.vector as ArrayLike<number>),
  ]);
  return out.sort((a, b) => a[0] - b[0]);
}

/** The id of the row nearest to `text`, and its distance. */
async function nearest(t: Table, text: string): Promise<[number, number]> {
  const [r] = await t.search(text).limit(1).toArray();
  return [Number(r.id), Number(r._distance)];
}

const letters2 = () => getRegistry().get<Letters>("letters")?.create({ scale: 2 }) as Letters;

let server: Server;
let served: Connection;

beforeAll(async () => {
  server = await serve({ dataDir: tmpDir(), apiKey: "k", flushIntervalMs: 60_000 });
  served = await connect("db://test", { apiKey: "k", region: "local", hostOverride: server.url });
});
afterAll(async () => server?.close());
beforeEach(() => {
  embedded.length = 0;
});

/** One connection per kind for the whole file. */
const once = (open: () => Promise<Connection>) => {
  let c: Promise<Connection> | undefined;
  return () => {
    c ??= open();
    return c;
  };
};
const kinds: Array<[string, () => Promise<Connection>]> = [
  ["local folder", once(() => connect(tmpDir()))],
  ["memory", once(() => connect("memory://"))],
  ["served", async () => served],
];

describe.each(kinds)("a registered function on a %s table", (kind, db) => {
  const name = `fruit_${kind.replace(/ /g, "_")}`;

  test("create, add, mergeInsert and search embed the source column", async () => {
    const c = await db();
    const t = await c.createTable(name, fruit(), { embeddingFunction: { function: letters2(), sourceColumn: "text" }, mode: "overwrite" });
    expect(embedded).toEqual(["banana", "cherry", "apple tree"]);
    const schema = await t.schema();
    expect(schema.fields.map((f) => f.name)).toEqual(["id", "text", "vector"]);
    expect(String(schema.fields[2].type)).toBe("FixedSizeList[3]<Float32>");
    expect(await rows(t)).toEqual(fruit().map((r) => [Number(r.id), r.text, letters(r.text, 2)]));

    // add: rows without a vector get one; rows with their own vector keep it.
    await t.add([{ id: 4n, text: "pear" }]);
    await t.add([{ id: 5n, text: "own", vector: [7, 7, 7] }]);
    expect(embedded.slice(3)).toEqual(["pear"]);
    // mergeInsert: the updated text is embedded again (through the MemWAL on the served table).
    const merge = t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll();
    const r = await (kind === "served" ? merge.memWal() : merge).execute([
      { id: 2n, text: "cherries" },
      { id: 6n, text: "dates" },
    ]);
    expect(r).toMatchObject({ numUpdatedRows: 1, numInsertedRows: 1 });
    expect(await rows(t)).toEqual([
      [1, "banana", letters("banana", 2)],
      [2, "cherries", letters("cherries", 2)],
      [3, "apple tree", letters("apple tree", 2)],
      [4, "pear", letters("pear", 2)],
      [5, "own", [7, 7, 7]],
      [6, "dates", letters("dates", 2)],
    ]);

    // search("text"): the query is embedded (with the same scale) and searched in the vector column.
    embedded.length = 0;
    expect(await nearest(t, "cherries")).toEqual([2, 0]);
    expect(embedded).toEqual(["cherries"]);
    const hits = await t.search("banana").where("id > 1").select(["id"]).limit(2).toArray();
    expect(hits.map((h) => Number(h.id))).toEqual([6, 4]);
    // A vector search is unchanged.
    expect(Number((await t.search(letters("pear", 2)).limit(1).toArray())[0].id)).toBe(4);
  });

  test("the table reopened through the same connection still embeds", async () => {
    const t = await (await db()).openTable(name);
    await t.add([{ id: 7n, text: "aaaa" }]);
    expect((await rows(t)).find((r) => r[0] === 7)?.[2]).toEqual(letters("aaaa", 2));
    expect(await nearest(t, "aaaa")).toEqual([7, 0]);
  });
});

describe("what a table records", () => {
  test("a local table reopened by a new connection makes its function again, with its options", async () => {
    const dir = tmpDir();
    await (await connect(dir)).createTable("t", fruit(), {
      embeddingFunction: { function: letters2(), sourceColumn: "text", vectorColumn: "emb" },
    });
    const t = await (await connect(dir)).openTable("t");
    const schema = await t.schema();
    const entry = JSON.parse(schema.fields.find((f) => f.name === "emb")?.metadata.get("embedding_functions") ?? "[]");
    expect(entry).toEqual([{ sourceColumn: "text", vectorColumn: "emb", name: "letters", model: { scale: 2 } }]);
    embedded.length = 0;
    await t.add([{ id: 9n, text: "eee" }]);
    expect(embedded).toEqual(["eee"]);
    const [r] = await t.search("eee").limit(1).toArray();
    expect([Number(r.id), Number(r._distance), Array.from(r.emb as ArrayLike<number>)]).toEqual([9, 0, letters("eee", 2)]);
    // A rewrite of the whole table keeps the function recorded.
    await t.add([{ id: 1n, text: "kiwi" }], { mode: "overwrite" });
    const again = await (await connect(dir)).openTable("t");
    await again.add([{ id: 2n, text: "fig" }]);
    expect((await again.query().toArray()).map((x) => Array.from(x.emb as ArrayLike<number>))).toEqual([
      letters("kiwi", 2),
      letters("fig", 2),
    ]);
  });

  test("a served table opened by another connection makes its function from the recorded schema", async () => {
    await served.createTable("served_other", fruit(), { embeddingFunction: { function: letters2(), sourceColumn: "text" } });
    const other = await connect("db://test", { apiKey: "k", region: "local", hostOverride: server.url });
    const t = await other.openTable("served_other");
    const recorded = (await t.schema()).metadata.get("embedding_functions") ?? "[]";
    expect(JSON.parse(recorded)).toEqual([{ sourceColumn: "text", vectorColumn: "vector", name: "letters", model: { scale: 2 } }]);
    expect(await nearest(t, "banana")).toEqual([1, 0]);
    // Rows added there without vectors get them, memWal upserts included.
    await t.add([{ id: 7n, text: "plum" }]);
    await t
      .mergeInsert("id")
      .whenMatchedUpdateAll()
      .whenNotMatchedInsertAll()
      .memWal()
      .execute([{ id: 8n, text: "pear" }]);
    expect(await nearest(t, "plum")).toEqual([7, 0]);
    expect(await nearest(t, "pear")).toEqual([8, 0]);
  });

  test("LanceSchema + createEmptyTable: the schema records the function and writes embed", async () => {
    const fn = letters2();
    const schema = LanceSchema({ id: new Int64(), text: fn.sourceField(), vector: fn.vectorField() });
    expect(JSON.parse(schema.metadata.get("embedding_functions") ?? "")).toEqual([
      { sourceColumn: "text", vectorColumn: "vector", name: "letters", model: { scale: 2 } },
    ]);
    expect(String(schema.fields[2].type)).toBe("FixedSizeList[3]<Float32>");
    for (const c of [await connect(tmpDir()), served]) {
      const t = await c.createEmptyTable("schema_made", schema, { mode: "overwrite" });
      await t.add(fruit());
      expect(await rows(t)).toEqual(fruit().map((r) => [Number(r.id), r.text, letters(r.text, 2)]));
      expect(await nearest(t, "apple tree")).toEqual([3, 0]);
    }
  });

  test("as 0.39, a vector column that is null (or missing) in every row is computed; given in some rows only is refused", async () => {
    const vt = new FixedSizeList(3, new Field("item", new Float32(), true));
    const schema = new Schema([new Field("id", new Int64(), true), new Field("text", new Utf8(), true), new Field("vector", vt, true)]);
    const t = await (await connect(tmpDir())).createEmptyTable("nulls", schema, {
      embeddingFunction: { function: letters2(), sourceColumn: "text" },
    });
    await t.add([{ id: 1n, text: "ab", vector: null }]);
    await t.add([
      { id: 2n, text: "abe", vector: undefined },
      { id: 3n, text: "e", vector: null },
    ]);
    // An Arrow table whose vector column is all null, as IPC bytes.
    await t.add(tableToIPC(makeArrowTable([{ id: 4n, text: "aaa", vector: null }], { schema })));
    const expected = (n: number, text: string): [number, string, number[]] => [n, text, letters(text, 2)];
    expect(await rows(t)).toEqual([expected(1, "ab"), expected(2, "abe"), expected(3, "e"), expected(4, "aaa")]);
    // 0.39 would store null for the rows without one (it computes only an all-null column): refused, nothing written.
    for (const mixed of [
      [
        { id: 5n, text: "x", vector: [1, 2, 3] },
        { id: 6n, text: "y", vector: null },
      ],
      [
        { id: 5n, text: "x", vector: [1, 2, 3] },
        { id: 6n, text: "y" },
      ],
    ]) {
      await expect(t.add(mixed)).rejects.toThrow(/vector column 'vector'.*1 of 2 rows/);
    }
    expect(await t.countRows()).toBe(4);
  });

  test("fromDataToBuffer with a table's schema computes the vectors of its recorded function, as 0.39", async () => {
    const vt = new FixedSizeList(3, new Field("item", new Float32(), true));
    const schema = new Schema([new Field("id", new Int64(), false), new Field("text", new Utf8(), false), new Field("vector", vt, false)]);
    const t = await (await connect(tmpDir())).createEmptyTable("buffered", schema, {
      embeddingFunction: { function: letters2(), sourceColumn: "text" },
    });
    const tableSchema = await t.schema();
    const data = [
      { id: 1n, text: "ab" },
      { id: 2n, text: "eee" },
    ];
    for (const buf of [
      await fromDataToBuffer(data, undefined, tableSchema),
      await fromDataToBuffer(makeArrowTable(data), undefined, tableSchema),
    ]) {
      const back = tableFromIPC(buf);
      expect(back.schema.fields.map((f) => `${f.name}:${f.nullable}`)).toEqual(["id:false", "text:false", "vector:false"]);
      expect(back.toArray().map((r) => Array.from(r.vector as ArrayLike<number>))).toEqual([letters("ab", 2), letters("eee", 2)]);
    }
    // The buffer adds as is.
    await t.add(await fromDataToBuffer(data, undefined, tableSchema));
    expect(await rows(t)).toEqual([
      [1, "ab", letters("ab", 2)],
      [2, "eee", letters("eee", 2)],
    ]);
  });

  test("Arrow tables and IPC bytes lacking the vector column are embedded too", async () => {
    const t = await (await connect("memory://")).createTable("arrow", tableFromArrays({ id: [1, 2], text: ["ab", "aab"] }), {
      embeddingFunction: { function: letters2(), sourceColumn: "text" },
    });
    await t.add(tableToIPC(tableFromArrays({ id: [3], text: ["eeee"] })));
    const got = (await t.query().toArray()).map((r) => [Number(r.id), Array.from(r.vector as ArrayLike<number>)]);
    expect(got).toEqual([
      [1, letters("ab", 2)],
      [2, letters("aab", 2)],
      [3, letters("eeee", 2)],
    ]);
  });
});

describe("an instance whose class is not registered (as 0.39: used as given, recorded by its class name)", () => {
  const entry = JSON.stringify([{ sourceColumn: "text", vectorColumn: "vector", name: "Scaled", model: { scale: 3 } }]);

  test("createTable embeds with it, records the class name and toJSON(), and its connection keeps using it", async () => {
    const dir = tmpDir();
    const db = await connect(dir);
    const t = await db.createTable("s", fruit(), { embeddingFunction: { function: new Scaled({ scale: 3 }), sourceColumn: "text" } });
    expect((await t.schema()).metadata.get("embedding_functions")).toBe(entry);
    await t.add([{ id: 4n, text: "pear" }]);
    expect((await rows(t)).map((r) => r[2])).toEqual(["banana", "cherry", "apple tree", "pear"].map((x) => letters(x, 3)));
    expect(await nearest(t, "cherry")).toEqual([2, 0]);
    const again = await db.openTable("s");
    await again.add([{ id: 5n, text: "fig" }]);
    expect(await nearest(again, "fig")).toEqual([5, 0]);
  });

  test("another connection cannot make it: writes needing it and search(text) are refused naming it, nothing null is stored", async () => {
    const dir = tmpDir();
    await (await connect(dir)).createTable("s", fruit(), {
      embeddingFunction: { function: new Scaled({ scale: 3 }), sourceColumn: "text" },
    });
    const t = await (await connect(dir)).openTable("s");
    expect((await t.schema()).metadata.get("embedding_functions")).toBe(entry);
    const why = /embedding function 'Scaled' \(text -> vector\) is not registered in this process/;
    await expect(t.add([{ id: 4n, text: "pear" }])).rejects.toThrow(InvalidInputError);
    await expect(t.add([{ id: 4n, text: "pear" }])).rejects.toThrow(why);
    await expect(
      t
        .mergeInsert("id")
        .whenNotMatchedInsertAll()
        .execute([{ id: 4n, text: "pear" }]),
    ).rejects.toThrow(why);
    await expect(t.search("pear").toArray()).rejects.toThrow(why);
    expect(await t.countRows()).toBe(3);
    // Rows that give their vectors need no function.
    await t.add([{ id: 4n, text: "pear", vector: letters("pear", 3) }]);
    expect(await t.countRows()).toBe(4);
  });

  test("LanceSchema records it by class name and an empty table made from that schema embeds with it", async () => {
    const fn = new Scaled({ scale: 3 });
    const schema = LanceSchema({ id: new Int64(), text: fn.sourceField(), vector: fn.vectorField() });
    expect(schema.metadata.get("embedding_functions")).toBe(entry);
    const t = await (await connect(tmpDir())).createEmptyTable("e", schema);
    await t.add([{ id: 1n, text: "kiwi" }]);
    expect(await rows(t)).toEqual([[1, "kiwi", letters("kiwi", 3)]]);
  });

  test("convertToTable computes the vector column with it and records it", async () => {
    const t = await convertToTable([{ text: "plum" }, { text: "lime" }], { function: new Scaled({ scale: 3 }), sourceColumn: "text" });
    expect(t.schema.metadata.get("embedding_functions")).toBe(entry);
    expect(t.toArray().map((r) => Array.from(r.vector as ArrayLike<number>))).toEqual([letters("plum", 3), letters("lime", 3)]);
  });

  test("a class named as another class is registered is refused: reopening would make the other one", async () => {
    const Impostor = (() => class letters extends Scaled {})();
    const db = await connect(tmpDir());
    await expect(db.createTable("i", fruit(), { embeddingFunction: { function: new Impostor(), sourceColumn: "text" } })).rejects.toThrow(
      /the name 'letters' is registered to another class/,
    );
    expect(await db.tableNames()).toEqual([]);
  });
});

describe("errors name what is wrong and write nothing", () => {
  let db: Connection;
  let t: Table;
  beforeAll(async () => {
    db = await connect(tmpDir());
    t = await db.createTable("e", fruit(), { embeddingFunction: { function: letters2(), sourceColumn: "text" } });
  });

  test("an unregistered function, a malformed option and an unknown provider", async () => {
    // An unregistered class is recorded by its class name; one without a name could never be made again.
    const Anonymous = (() => class extends Unregistered {})();
    await expect(db.createTable("u", fruit(), { embeddingFunction: { function: new Anonymous(), sourceColumn: "text" } })).rejects.toThrow(
      InvalidInputError,
    );
    await expect(db.createTable("u", fruit(), { embeddingFunction: { function: new Anonymous(), sourceColumn: "text" } })).rejects.toThrow(
      /its class has no name and is not registered/,
    );
    const plain = { computeSourceEmbeddings: async (xs: string[]) => xs.map((x) => letters(x)) } as unknown as EmbeddingFunction;
    await expect(db.createTable("u", fruit(), { embeddingFunction: { function: plain, sourceColumn: "text" } })).rejects.toThrow(
      /a plain object is not an instance of an EmbeddingFunction class/,
    );
    const bad = { function: {} as EmbeddingFunction, sourceColumn: "text" };
    await expect(db.createTable("u", fruit(), { embeddingFunction: bad })).rejects.toThrow(/must be an EmbeddingFunction/);
    expect(await db.tableNames()).toEqual(["e"]);
    expect(() => getRegistry().get("huggingface")).toThrow(NotSupportedError);
    expect(getRegistry().get("no-such")).toBeUndefined();
    expect(() => getRegistry().register("letters")(Unregistered)).toThrow('Embedding function with alias "letters" already exists');
  });

  test("vectors of the wrong size, count, or a throwing function: the add fails and the rows stay as they were", async () => {
    const wrong = await db.createTable("w", [{ id: 1n, text: "x", vector: [1, 2, 3] }], {
      embeddingFunction: { function: new Broken({ mode: "dims" }), sourceColumn: "text" },
    });
    const input = [{ id: 2n, text: "y" }];
    await expect(wrong.add(input)).rejects.toThrow(InvalidInputError);
    await expect(wrong.add(input)).rejects.toThrow(/vector 0 has 4 dimensions, the column 3/);
    await expect(wrong.mergeInsert("id").whenNotMatchedInsertAll().execute(input)).rejects.toThrow(/4 dimensions/);
    expect(input).toEqual([{ id: 2n, text: "y" }]);
    const counted = await db.createTable("c", [{ id: 1n, text: "x", vector: [1, 2, 3] }], {
      embeddingFunction: { function: new Broken({ mode: "count" }), sourceColumn: "text" },
    });
    await expect(
      counted.add([
        { id: 2n, text: "y" },
        { id: 3n, text: "z" },
      ]),
    ).rejects.toThrow(/answered 1 vectors for 2 values/);
    const throwing = await db.createTable("th", [{ id: 1n, text: "x", vector: [1, 2, 3] }], {
      embeddingFunction: { function: new Broken({ mode: "throw" }), sourceColumn: "text" },
    });
    // The function's own error reaches the caller as it was thrown.
    await expect(throwing.add(input)).rejects.toBe(brokenError);
    await expect(throwing.search("y").toArray()).rejects.toBe(brokenError);
    for (const x of [wrong, counted, throwing]) expect(await x.countRows()).toBe(1);
    expect(await t.countRows()).toBe(3);
  });

  test("text searches without a function, full-text search, and a function the process does not have", async () => {
    const plain = await db.createTable("plain", [{ id: 1n, vector: [1, 2, 3] }]);
    // 0.39's "auto" rule: text on a table without an embedding function is a full-text search (no FTS index here).
    await expect(plain.search("banana").toArray()).rejects.toThrow(InvalidInputError);
    await expect(plain.search("banana").toArray()).rejects.toThrow(/Cannot perform full text search unless an INVERTED index/);
    await expect(plain.search("banana", "vector").toArray()).rejects.toThrow(
      /^No embedding functions are defined in the table: .*has no embedding function/,
    );
    await expect(t.search("banana", "fts").toArray()).rejects.toThrow(/INVERTED index/);
    // With a function, "auto" embeds (ftsColumns only matter to a full-text search).
    expect((await t.search("banana", "auto", "text").toArray()).length).toBeGreaterThan(0);
    await expect(t.search("banana").column("nope").toArray()).rejects.toThrow(/has none for column 'nope'/);
    // A table whose metadata names a function nobody registered: writes needing it say so; complete rows still go in.
    const meta = new Map([
      ["embedding_functions", JSON.stringify([{ name: "gone", sourceColumn: "text", vectorColumn: "vector", model: {} }])],
    ]);
    const schema = new Schema(
      [
        new Field("id", new Int64(), true),
        new Field("text", new Utf8(), true),
        new Field("vector", new FixedSizeList(3, new Field("item", new Float32(), true)), true),
      ],
      meta,
    );
    const gone = await db.createEmptyTable("gone", schema);
    await expect(gone.add([{ id: 1n, text: "a" }])).rejects.toThrow(
      /^Function "gone" not found in registry: .*'gone' \(text -> vector\) is not registered/,
    );
    await gone.add([{ id: 1n, text: "a", vector: [1, 1, 1] }]);
    expect(await gone.countRows()).toBe(1);
  });

  test("a sensitive option given raw is refused; variables resolve", () => {
    const openai = getRegistry().get("openai");
    expect(() => openai?.create({ apiKey: "sk-raw" })).toThrow(
      'The key "apiKey" is sensitive and cannot be set directly. Please use the $var: syntax to set it.',
    );
    expect(() => openai?.create({ apiKey: "$var:never_set" })).toThrow(
      /^Variable "never_set" not found \(embedding option 'apiKey' names it\)/,
    );
    expect(() => openai?.create({ apiKey: "$var:never_set:fallback" })).not.toThrow();
  });
});

describe("the openai provider against an OpenAI-compatible endpoint", () => {
  const requests: Array<{ url?: string; auth?: string; body: { model: string; input: string[]; dimensions?: number } }> = [];
  let fake: http.Server;
  let base: string;
  let status = 200;

  beforeAll(async () => {
    fake = http.createServer((req, res) => {
      let body = "";
      req.on("data", (c) => {
        body += c;
      });
      req.on("end", () => {
        const parsed = JSON.parse(body);
        requests.push({ url: req.url, auth: req.headers.authorization, body: parsed });
        if (status !== 200) {
          res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify({ error: { message: "no" } }));
          return;
        }
        // Answered out of order: the client must place each by its index.
        const data = (parsed.input as string[])
          .map((t, index) => ({ object: "embedding", index, embedding: [...letters(t), 1] }))
          .reverse();
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ object: "list", data, model: parsed.model }));
      });
    });
    await new Promise<void>((r) => fake.listen(0, "127.0.0.1", r));
    base = `http://127.0.0.1:${(fake.address() as AddressInfo).port}/v1`;
    getRegistry().setVar("fake_openai_key", "sk-test");
  });
  afterAll(() => new Promise<void>((r) => fake.close(() => r())));
  beforeEach(() => {
    requests.length = 0;
    status = 200;
  });

  const make = () =>
    getRegistry()
      .get<embedding.OpenAIEmbeddingFunction>("openai")
      ?.create({ model: "fake-embed", apiKey: "$var:fake_openai_key", baseURL: base, dimensions: 4 }) as embedding.OpenAIEmbeddingFunction;

  test("create, add and search call /v1/embeddings; the key is never recorded", async () => {
    const dir = tmpDir();
    const fn = make();
    expect(fn.ndims()).toBe(4);
    expect(fn.toJSON()).toEqual({ model: "fake-embed", apiKey: "$var:fake_openai_key", baseURL: base, dimensions: 4 });
    const t = await (await connect(dir)).createTable("o", fruit(), { embeddingFunction: { function: fn, sourceColumn: "text" } });
    expect(requests).toEqual([
      {
        url: "/v1/embeddings",
        auth: "Bearer sk-test",
        body: { model: "fake-embed", input: ["banana", "cherry", "apple tree"], encoding_format: "float", dimensions: 4 },
      },
    ]);
    expect((await t.query().toArray()).map((r) => Array.from(r.vector as ArrayLike<number>))).toEqual(
      fruit().map((r) => [...letters(r.text), 1]),
    );
    const reopened = await (await connect(dir)).openTable("o");
    expect((await reopened.schema()).fields[2].metadata.get("embedding_functions")).not.toContain("sk-test");
    const [hit] = await reopened.search("cherry").limit(1).toArray();
    expect([Number(hit.id), Number(hit._distance)]).toEqual([2, 0]);
    expect(requests.at(-1)?.body.input).toEqual(["cherry"]);
  });

  test("an endpoint's refusal is an AuthError or HttpError and nothing is written", async () => {
    const t = await (await connect("memory://")).createTable("o", fruit(), {
      embeddingFunction: { function: make(), sourceColumn: "text" },
    });
    status = 401;
    await expect(t.add([{ id: 9n, text: "x" }])).rejects.toThrow(AuthError);
    status = 500;
    await expect(t.add([{ id: 9n, text: "x" }])).rejects.toThrow(HttpError);
    await expect(t.search("x").toArray()).rejects.toThrow(/answered 500/);
    expect(await t.countRows()).toBe(3);
  });
});
