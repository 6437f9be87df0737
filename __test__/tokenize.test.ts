/**
 * `tokenize()` and `Table.tokenize`: the tokens of a text under an FTS index's tokenizer, on local, memory and
 * served tables, held to @lancedb/lancedb 0.39's own `tokenize` (installed in bench/ by scripts/test.sh) on the
 * same texts and options, and to what a full-text search of those tokens finds.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { type Connection, Index, InvalidInputError, tokenize } from "../lib";
import { tableKinds } from "./helpers";

const { kinds } = tableKinds();

const clientPath = path.join(__dirname, "..", "bench", "node_modules", "@lancedb", "lancedb");

test("tokenize with explicit options: 0.39's answers from its own suite", async () => {
  expect(await tokenize("Running in cafés", { baseTokenizer: "simple" })).toEqual([
    { text: "run", position: 0 },
    { text: "cafe", position: 2 },
  ]);
  // Custom stop words replace the language's list ("the" stays).
  const custom = await tokenize("the lance data", { stem: false, removeStopWords: true, customStopWords: ["lance"] });
  expect(custom.map((t) => t.text)).toEqual(["the", "data"]);
  // An empty list replaces it with none.
  const none = await tokenize("the lance data", { stem: false, customStopWords: [] });
  expect(none.map((t) => t.text)).toEqual(["the", "lance", "data"]);
});

test("tokenize refuses what it cannot do, by name", async () => {
  await expect(tokenize("x", { baseTokenizer: "jieba/default" })).rejects.toThrow(/jieba/);
  await expect(tokenize("x", { baseTokenizer: "lindera/ipadic" })).rejects.toBeInstanceOf(InvalidInputError);
  await expect(tokenize("x", { stemming: true } as never)).rejects.toThrow(/unknown option "stemming"/);
  await expect(tokenize("x", { maxTokenLength: -1 })).rejects.toThrow(/maxTokenLength/);
  await expect(tokenize(5 as never)).rejects.toThrow(/must be a string/);
});

describe("tokenize against @lancedb/lancedb 0.39's", () => {
  // biome-ignore lint/suspicious/noExplicitAny: untyped module loaded with require
  let lancedb: any;
  beforeAll(() => {
    expect(fs.existsSync(clientPath)).toBe(true);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    lancedb = require(clientPath);
  });

  const texts = [
    "Running in cafés",
    "The QUICK brown foxes jumped over the lazy dogs' houses!",
    "naïve façade, déjà vu; crème brûlée",
    "  tabs\tand\nnewlines  ",
    "a-b_c d.e f/g 12 3.14 x86_64",
    "supercalifragilisticexpialidocious".repeat(3),
    "",
    "ünïcödé ÀÉÎÕÜ straße",
    "Hello, こんにちは世界!",
    "我爱北京天安门, foo_bar-baz",
    "ภาษาไทยง่ายนิดเดียว 한국어 텍스트",
  ];
  const options: Array<Record<string, unknown>> = [
    {},
    { baseTokenizer: "whitespace" },
    { baseTokenizer: "raw" },
    { stem: false, removeStopWords: false },
    { asciiFolding: false, lowercase: false },
    { maxTokenLength: 5 },
    { language: "French" },
    { baseTokenizer: "ngram", ngramMinLength: 2, ngramMaxLength: 4 },
    { baseTokenizer: "ngram", prefixOnly: true },
    { customStopWords: ["brown", "cafés"] },
    { baseTokenizer: "icu" },
    { baseTokenizer: "icu", stem: false, removeStopWords: false },
    { baseTokenizer: "icu/split" },
  ];
  test.each(options)("the same tokens with %j", async (o) => {
    for (const text of texts) {
      const theirs = await lancedb.tokenize(text, o);
      const ours = await tokenize(text, o);
      expect([text, ours]).toEqual([text, theirs.map((t: { text: string; position: number }) => ({ ...t }))]);
    }
  });
});

let n = 0;
describe.each(kinds)("Table.tokenize on a %s table", (_kind, open) => {
  let db: Connection;
  beforeAll(async () => {
    db = await open();
  });

  test("by column or index name, with the index's own tokenizer; a search of the tokens finds the row", async () => {
    n += 1;
    const t = await db.createTable(`tok${n}`, [
      { id: 1, text: "Running in cafés", title: "Running in cafés" },
      { id: 2, text: "walking home", title: "walking home" },
    ]);
    await t.createIndex("text", { config: Index.fts({ baseTokenizer: "simple" }) });
    await t.createIndex("title", {
      config: Index.fts({ baseTokenizer: "whitespace", stem: false, lowercase: false }),
      name: "title_ws",
    });
    expect(await t.tokenize("Running in cafés", { column: "text" })).toEqual([
      { text: "run", position: 0 },
      { text: "cafe", position: 2 },
    ]);
    const byName = await t.tokenize("Running in cafés", { indexName: "title_ws" });
    expect(byName.map((x) => x.text)).toEqual(["Running", "cafes"]);
    expect(await t.tokenize("Running in cafés", { column: "title" })).toEqual(byName);
    // The tokens are what the index holds: searching one finds the row.
    const hits = await t.query().fullTextSearch("cafe", { columns: "text" }).toArray();
    expect(hits.map((r) => Number(r.id))).toEqual([1]);
  });

  test("exactly one of column or indexName, and an index that exists", async () => {
    n += 1;
    const t = await db.createTable(`tok${n}`, [{ id: 1, text: "a b" }]);
    await t.createIndex("text", { config: Index.fts() });
    await expect(t.tokenize("hello", {} as never)).rejects.toThrow("Specify exactly one");
    await expect(t.tokenize("hello", { column: "text", indexName: "text_idx" } as never)).rejects.toThrow("Specify exactly one");
    await expect(t.tokenize("hello", { column: "id" })).rejects.toThrow("no FTS index on column 'id'");
    await expect(t.tokenize("hello", { indexName: "nope" })).rejects.toThrow("no FTS index named 'nope'");
    await expect(t.tokenize("hello", { column: "text", extra: 1 } as never)).rejects.toThrow(/unknown tokenize option "extra"/);
    expect(await t.tokenize("hello worlds", { indexName: "text_idx" })).toEqual([
      { text: "hello", position: 0 },
      { text: "world", position: 1 },
    ]);
  });
});
