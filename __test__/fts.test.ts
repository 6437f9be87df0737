/**
 * Full-text search from TypeScript: `Index.fts`, `fullTextSearch` with text and every query class, `search(text,
 * "fts")` and the "auto" rule, on local, memory and served tables (where an upsert goes through the MemWAL).
 */
import {
  BooleanQuery,
  BoostQuery,
  type Connection,
  type FullTextQuery,
  Index,
  InvalidInputError,
  MatchQuery,
  MultiMatchQuery,
  Occur,
  Operator,
  PhraseQuery,
  RRFReranker,
  type Table,
} from "../lib";
import { tableKinds } from "./helpers";

const { kinds } = tableKinds();

const DOCS = [
  { id: 1, title: "puppy", text: "the quick brown fox jumps over the lazy dog" },
  { id: 2, title: "fox", text: "a lazy cat sleeps all day" },
  { id: 3, title: "birds", text: "brown birds fly south in winter" },
  { id: 4, title: "dogs", text: "dogs chase cats and foxes" },
];

function ids(rows: Array<Record<string, unknown>>): number[] {
  return rows.map((r) => Number(r.id));
}

let n = 0;
async function docs(db: Connection, withPosition = true): Promise<Table> {
  n += 1;
  const t = await db.createTable(`docs${n}`, DOCS);
  await t.createIndex("text", { config: Index.fts({ withPosition }) });
  await t.createIndex("title", { config: Index.fts() });
  return t;
}

describe.each(kinds)("full-text search on a %s table", (kind, open) => {
  let db: Connection;
  beforeAll(async () => {
    db = await open();
  });

  test("Index.fts: createIndex, listIndices, indexStats, dropIndex", async () => {
    const t = await docs(db);
    const list = await t.listIndices();
    expect(list.map((i) => [i.name, i.indexType, i.columns])).toEqual(
      expect.arrayContaining([
        ["text_idx", "FTS", ["text"]],
        ["title_idx", "FTS", ["title"]],
      ]),
    );
    const stats = await t.indexStats("text_idx");
    expect(stats?.indexType).toBe("FTS");
    expect(stats?.numIndexedRows).toBe(4);
    await t.dropIndex("title_idx");
    expect((await t.listIndices()).map((i) => i.name)).toEqual(["text_idx"]);
  });

  test("blockSize 128 or 256: recorded as Lance records it, and every page equals the one of an exhaustive walk", async () => {
    n += 1;
    // Enough rows for many blocks: "common" in most rows, "rare" in a few, lengths varying.
    const rows = Array.from({ length: 1200 }, (_, i) => ({
      id: i,
      text: [i % 7 === 0 ? "rare" : "", "common ".repeat(1 + (i % 5)), "filler ".repeat(i % 11)].join(" "),
    }));
    const t = await db.createTable(`blocks${n}`, rows);
    const pages = async () => {
      const out: number[][] = [];
      for (const [limit, offset] of [
        [10, 0],
        [5, 7],
        [40, 3],
      ]) {
        const q = t.query().fullTextSearch("common rare", { columns: "text" }).select(["id"]).limit(limit).offset(offset);
        out.push(ids(await q.toArray()));
      }
      return out;
    };
    for (const blockSize of [128, 256] as const) {
      await t.createIndex("text", { config: Index.fts({ blockSize }) });
      const ix = (await t.listIndices()).find((i) => i.name === "text_idx");
      expect(ix?.indexVersion).toBe(blockSize === 256 ? 3 : 2);
      expect((ix?.indexDetails as Record<string, unknown> | undefined)?.block_size).toBe(blockSize);
      // The whole answer (no limit walks every matching row) gives the pages the pruned walk must give.
      const all = ids(await t.query().fullTextSearch("common rare", { columns: "text" }).select(["id"]).limit(2000).toArray());
      expect(all.length).toBe(1200);
      expect(await pages()).toEqual([all.slice(0, 10), all.slice(7, 12), all.slice(3, 43)]);
    }
  });

  test("fullTextSearch with text: BM25 _score, where, limit, offset, select, withRowId", async () => {
    const t = await docs(db);
    const rows = await t.query().fullTextSearch("lazy", { columns: "text" }).toArray();
    expect(ids(rows).sort()).toEqual([1, 2]);
    for (const r of rows) expect(typeof r._score).toBe("number");
    expect(
      await t
        .query()
        .fullTextSearch("lazy", { columns: ["text"] })
        .where("id > 1")
        .toArray()
        .then(ids),
    ).toEqual([2]);
    const all = await t.query().fullTextSearch("brown lazy", { columns: "text" }).toArray();
    expect(ids(all).sort()).toEqual([1, 2, 3]);
    const paged = await t.query().fullTextSearch("brown lazy", { columns: "text" }).limit(1).offset(1).toArray();
    expect(ids(paged)).toEqual([ids(all)[1]]);
    const sel = await t.query().fullTextSearch("winter", { columns: "text" }).select(["id"]).withRowId().toArray();
    expect(Object.keys(sel[0]).sort()).toEqual(["_rowid", "_score", "id"]);
    expect(ids(await t.search("birds", "fts", "text").toArray())).toEqual([3]);
    // select places the columns it lists where it lists them, _score and _rowid too (as 0.39).
    const cols = async (q: { toArrow(): Promise<{ schema: { fields: { name: string }[] } }> }) =>
      (await q.toArrow()).schema.fields.map((f) => f.name);
    const fts = () => t.query().fullTextSearch("lazy", { columns: "text" });
    expect(await cols(fts().select(["_score", "id"]))).toEqual(["_score", "id"]);
    expect(await cols(fts().select(["id", "_rowid"]))).toEqual(["id", "_rowid", "_score"]);
    expect(await cols(fts().select(["id"]).withRowId())).toEqual(["id", "_score", "_rowid"]);
    await expect(t.query().select(["id", "_score"]).toArray()).rejects.toThrow(/only a full-text search answers _score/);
    // orderBy sorts the best offset + limit rows by score, then pages them (0.39's order), not the best 10.
    const many = await t.query().fullTextSearch("brown lazy winter birds", { columns: "text" }).limit(50).toArray();
    const best = (n: number) => ids(many.slice(0, n));
    const ordered = (limit: number, offset = 0) =>
      t
        .query()
        .fullTextSearch("brown lazy winter birds", { columns: "text" })
        .orderBy({ columnName: "id", ascending: false })
        .limit(limit)
        .offset(offset)
        .toArray()
        .then(ids);
    expect(await ordered(50)).toEqual(best(50).sort((a, b) => b - a));
    expect(await ordered(2, 1)).toEqual(
      best(3)
        .sort((a, b) => b - a)
        .slice(1),
    );
    // No embedding function: search(text) is a full-text search (0.39's "auto" rule).
    expect(ids(await t.search("winter").toArray())).toEqual([3]);
  });

  test("every query class", async () => {
    const t = await docs(db);
    const q = (x: FullTextQuery) => t.query().fullTextSearch(x).toArray().then(ids);
    expect((await q(new MatchQuery("lazy dog", "text", { operator: Operator.And }))).sort()).toEqual([1]);
    expect((await q(new MatchQuery("lazi", "text", { fuzziness: 1 }))).sort()).toEqual([1, 2]);
    expect(await q(new PhraseQuery("lazy dog", "text"))).toEqual([1]);
    expect(await q(new PhraseQuery("dog lazy", "text"))).toEqual([]);
    const boosted = await q(new BoostQuery(new MatchQuery("lazy", "text"), new MatchQuery("cat", "text"), { negativeBoost: 1 }));
    expect(boosted).toEqual([1, 2]);
    // "foxes" stems to "fox".
    expect((await q(new MultiMatchQuery("fox", ["text", "title"]))).sort()).toEqual([1, 2, 4]);
    const bool = new BooleanQuery([
      [Occur.Must, new MatchQuery("brown", "text")],
      [Occur.MustNot, new MatchQuery("birds", "text")],
    ]);
    expect(await q(bool)).toEqual([1]);
    expect(ids(await t.search(new MatchQuery("winter", "text")).toArray())).toEqual([3]);
    // A quoted string is a phrase.
    expect(ids(await t.query().fullTextSearch('"lazy dog"', { columns: "text" }).toArray())).toEqual([1]);
  });

  test("an upsert is found by the next search, the text it replaced is not; a delete disappears", async () => {
    const t = await docs(db);
    const upsert = t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll();
    // A served table's upsert goes through its MemWAL (flushed after a minute here: the rows stay in memtables).
    await (kind === "served" ? upsert.memWal() : upsert).execute([
      { id: 3, title: "birds", text: "penguins swim in cold water" },
      { id: 5, title: "new", text: "winter is coming" },
    ]);
    expect(ids(await t.query().fullTextSearch("penguins", { columns: "text" }).toArray())).toEqual([3]);
    expect(ids(await t.query().fullTextSearch("winter", { columns: "text" }).toArray())).toEqual([5]);
    expect(ids(await t.query().fullTextSearch("south", { columns: "text" }).toArray())).toEqual([]);
    await t.delete("id = 5");
    expect(ids(await t.query().fullTextSearch("winter", { columns: "text" }).toArray())).toEqual([]);
  });

  test("fastSearch answers the indexed rows alone; postfilter filters the top rows", async () => {
    const t = await docs(db);
    const upsert = t.mergeInsert("id").whenMatchedUpdateAll().whenNotMatchedInsertAll();
    // Not in the index: row 3's new text and row 5 (a served table's buffered in its MemWAL).
    await (kind === "served" ? upsert.memWal() : upsert).execute([
      { id: 3, title: "birds", text: "brown penguins swim" },
      { id: 5, title: "new", text: "brown brown winter" },
    ]);
    const brown = (q: ReturnType<Table["query"]>) => q.fullTextSearch("brown", { columns: "text" }).select(["id"]).toArray();
    expect(ids(await brown(t.query())).sort()).toEqual([1, 3, 5]);
    // The index covers rows 1, 2, 4 of the live ones (row 3's indexed text was replaced): only row 1 holds "brown".
    const fast = await brown(t.query().fastSearch());
    expect(ids(fast)).toEqual([1]);
    // Its statistics are those of the indexed live rows alone: the score of a table holding only them.
    n += 1;
    const alone = await db.createTable(
      `alone${n}`,
      DOCS.filter((d) => d.id !== 3),
    );
    await alone.createIndex("text", { config: Index.fts({ withPosition: true }) });
    const want = await brown(alone.query());
    expect(Number(fast[0]._score)).toBeCloseTo(Number(want[0]._score), 5);
    // Postfilter: of the top 2 (short rows 5 and 3 rank above the long row 1), those the filter passes.
    const top2 = ids(await brown(t.query().limit(2)));
    expect(top2).toEqual([5, 3]);
    const post = ids(await brown(t.query().where("id < 5").postfilter().limit(2)));
    expect(post).toEqual([3]);
    const pre = ids(await brown(t.query().where("id < 5").limit(2)));
    expect(pre.length).toBe(2);
    expect(post.length).toBeLessThan(pre.length);
  });

  test("bad input is refused with a clear error", async () => {
    const t = await docs(db, false);
    expect(() => t.query().fullTextSearch("  ")).toThrow(/full-text query is empty/);
    await expect(t.query().fullTextSearch("x", { columns: "nope" }).toArray()).rejects.toThrow(/nope/);
    await expect(t.query().fullTextSearch(new PhraseQuery("lazy dog", "text")).toArray()).rejects.toThrow(/position/i);
    expect(() => Index.fts({ colour: 1 } as never)).toThrow(InvalidInputError);
    await expect(t.createIndex("text", { config: Index.fts({ baseTokenizer: "klingon" }) })).rejects.toThrow(/klingon/);
    // An option misspelled is refused by name, never ignored.
    expect(() => new MatchQuery("x", "text", { fuzzyness: 2 } as never)).toThrow(/fuzzyness/);
    expect(() => new PhraseQuery("x", "text", { slope: 2 } as never)).toThrow(/slope/);
    const m = new MatchQuery("x", "text");
    expect(() => new BoostQuery(m, m, { negative_boost: 1 } as never)).toThrow(/negative_boost/);
    expect(() => new MultiMatchQuery("x", ["text"], { boost: [1] } as never)).toThrow(/'boost'/);
    expect(() => t.query().fullTextSearch("x", { colums: "text" } as never)).toThrow(/colums/);
    // Nesting is bounded before anything recurses (5,000 levels were a RangeError of the JS stack).
    let deep: FullTextQuery = m;
    const nest = () => {
      for (let i = 0; i < 5000; i++) deep = new BooleanQuery([[Occur.Must, deep]]);
    };
    expect(nest).toThrow(InvalidInputError);
    expect(nest).toThrow(/nest at most 64 deep/);
  });

  test("fuzziness above 2 matches every term within that distance (Lance takes any distance)", async () => {
    const t = await docs(db);
    const fuzzy = (fuzziness: number) => t.query().fullTextSearch(new MatchQuery("bx", "text", { fuzziness, prefixLength: 1 }));
    // The terms starting with b: "bird" (3 edits from "bx"; "birds" stemmed) in 3, "brown" (4 edits) in 1 and 3.
    expect(ids(await fuzzy(2).toArray())).toEqual([]);
    expect(ids(await fuzzy(3).toArray())).toEqual([3]);
    expect(ids(await fuzzy(12).toArray()).sort()).toEqual([1, 3]);
  });

  test("hybrid: nearestTo(v).fullTextSearch(q).rerank(RRF) fuses both answers with _relevance_score", async () => {
    n += 1;
    const t = await db.createTable(`hybrid${n}`, [
      { id: 1, text: "the quick brown fox", vector: [1, 0] },
      { id: 2, text: "a lazy cat", vector: [0, 1] },
      { id: 3, text: "brown birds", vector: [1, 1] },
    ]);
    await t.createIndex("text", { config: Index.fts() });
    const rrf = await RRFReranker.create();
    const rows = await t.query().nearestTo([1, 0]).fullTextSearch("brown").rerank(rrf).toArray();
    // As @lancedb/lancedb 0.39 answers: 1/(60+rank) summed over both answers, rank from 0.
    expect(rows.map((r) => [Number(r.id), Math.round((r._relevance_score as number) * 1e6) / 1e6])).toEqual([
      [1, Math.round((1 / 60 + 1 / 61) * 1e6) / 1e6],
      [3, Math.round((1 / 60 + 1 / 61) * 1e6) / 1e6],
      [2, Math.round((1 / 62) * 1e6) / 1e6],
    ]);
    expect(Object.keys(rows[0]).sort()).toEqual(["_relevance_score", "id", "text", "vector"]);
    // An offset skips rows of each search before they are fused (0.39's order), not rows of the fused answer:
    // skipping one, the vector search answers 3 then 2, the text search 1 alone ("brown birds", shorter, ranks
    // first), so the fused answer holds all three (the fused answer skipped would hold two).
    const skipped = await t.query().nearestTo([1, 0]).fullTextSearch("brown").offset(1).toArray();
    const score = (r: Record<string, unknown>) => Math.round((r._relevance_score as number) * 1e6) / 1e6;
    expect(skipped.map((r) => [Number(r.id), score(r)]).sort()).toEqual([
      [1, Math.round((1 / 60) * 1e6) / 1e6],
      [2, Math.round((1 / 61) * 1e6) / 1e6],
      [3, Math.round((1 / 60) * 1e6) / 1e6],
    ]);
    const two = await t.query().nearestTo([1, 0]).fullTextSearch("brown").select(["id"]).withRowId().limit(2).toArray();
    expect(two.map((r) => Number(r.id))).toEqual([1, 3]);
    expect(Object.keys(two[0]).sort()).toEqual(["_relevance_score", "_rowid", "id"]);
    expect(() =>
      t
        .query()
        .nearestTo([1, 0])
        .rerank({} as never),
    ).toThrow(InvalidInputError);
    const schema = await t.query().nearestTo([1, 0]).fullTextSearch("brown").select(["id"]).outputSchema();
    expect(schema.fields.map((f) => f.name)).toEqual(["id", "_relevance_score"]);
    const fts = await t.query().fullTextSearch("brown").select(["id"]).outputSchema();
    expect(fts.fields.map((f) => f.name)).toEqual(["id", "_score"]);
  });
});
