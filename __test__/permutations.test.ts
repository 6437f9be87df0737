/**
 * permutationBuilder (@lancedb/lancedb 0.39's): the table of row ids and splits it makes, by each kind of split,
 * with shuffles (seeded: the same seed gives the same order; clumps stay together), filters, split names and the
 * source version in the metadata, persisted or in memory, and its refusals.
 */
import { connect, InvalidInputError, permutationBuilder, type Table } from "../lib";
import { tmpDir } from "./helpers";

type Row = { rowId: number; split: number };

async function rowsOf(t: Table): Promise<Row[]> {
  return (await t.query().toArray()).map((r) => ({ rowId: Number(r.row_id), split: Number(r.split_id) }));
}

async function source(n = 20): Promise<{ db: import("../lib").Connection; t: Table; idOf: Map<number, number> }> {
  const db = await connect(tmpDir());
  const t = await db.createTable(
    "src",
    Array.from({ length: n }, (_, i) => ({ id: i + 1, value: (i + 1) * 10 })),
  );
  const idOf = new Map<number, number>();
  for (const r of await t.query().withRowId().toArray()) idOf.set(Number(r._rowid), Number(r.id));
  return { db, t, idOf };
}

function sizes(rows: Row[]): number[] {
  const out: number[] = [];
  for (const r of rows) out[r.split] = (out[r.split] ?? 0) + 1;
  return out;
}

describe("permutationBuilder", () => {
  test("no split: every row id once, in order, split 0; the source version in the metadata", async () => {
    const { t, idOf } = await source(5);
    const p = await permutationBuilder(t).execute();
    expect(p.name).toBe("permutation");
    expect((await p.schema()).fields.map((f) => `${f.name}:${f.type}:${f.nullable}`)).toEqual([
      "row_id:Uint64:true",
      "split_id:Uint64:false",
    ]);
    expect((await p.schema()).metadata.get("base_version")).toBe(String(await t.version()));
    const rows = await rowsOf(p);
    expect(rows.map((r) => idOf.get(r.rowId))).toEqual([1, 2, 3, 4, 5]);
    expect(rows.every((r) => r.split === 0)).toBe(true);
  });

  test("sequential splits cut the rows in order: ratios, counts (the rest dropped), fixed (that many equal splits)", async () => {
    const { t, idOf } = await source(10);
    const byRatio = await rowsOf(
      await permutationBuilder(t)
        .splitSequential({ ratios: [0.3, 0.7] })
        .execute(),
    );
    expect(byRatio.map((r) => [idOf.get(r.rowId), r.split])).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((i) => [i, i <= 3 ? 0 : 1]));
    expect(
      sizes(
        await rowsOf(
          await permutationBuilder(t)
            .splitSequential({ counts: [2, 3] })
            .execute(),
        ),
      ),
    ).toEqual([2, 3]);
    expect(sizes(await rowsOf(await permutationBuilder(t).splitSequential({ fixed: 4 }).execute()))).toEqual([2, 2, 2, 2]);
  });

  test("random splits: sizes as asked, each row at most once, the same seed the same permutation", async () => {
    const { t } = await source(20);
    const run = (seed: number) =>
      permutationBuilder(t)
        .splitRandom({ ratios: [0.25, 0.5], seed })
        .execute()
        .then(rowsOf);
    const a = await run(7);
    expect(sizes(a)).toEqual([5, 10]);
    expect(new Set(a.map((r) => r.rowId)).size).toBe(15);
    expect(await run(7)).toEqual(a);
    expect(await run(8)).not.toEqual(a);
    // Grouped by split.
    expect(a.map((r) => r.split)).toEqual([...a.map((r) => r.split)].sort((x, y) => x - y));
  });

  test("hash splits are a function of the columns; the discard share is dropped", async () => {
    const { t, idOf } = await source(40);
    const a = await rowsOf(
      await permutationBuilder(t)
        .splitHash({ columns: ["id"], splitWeights: [1, 1], discardWeight: 2 })
        .execute(),
    );
    expect(a.length).toBeGreaterThan(0);
    expect(a.length).toBeLessThan(40);
    const b = await rowsOf(
      await permutationBuilder(t)
        .splitHash({ columns: ["id"], splitWeights: [1, 1], discardWeight: 2 })
        .execute(),
    );
    expect(b).toEqual(a);
    const all = await rowsOf(
      await permutationBuilder(t)
        .splitHash({ columns: ["id"], splitWeights: [1, 1] })
        .execute(),
    );
    expect(all.length).toBe(40);
    // A row keeps its split whatever else is in the table.
    const split = new Map(all.map((r) => [idOf.get(r.rowId), r.split]));
    for (const r of a) expect(split.get(idOf.get(r.rowId))).toBe(r.split);
  });

  test("calculated splits: split_id is the expression's value, of its type", async () => {
    const { t, idOf } = await source(6);
    const p = await permutationBuilder(t).splitCalculated({ calculation: "id % 3" }).execute();
    expect((await p.schema()).fields.map((f) => f.name)).toEqual(["split_id", "row_id"]);
    for (const r of await rowsOf(p)) expect(r.split).toBe((idOf.get(r.rowId) ?? -1) % 3);
  });

  test("shuffle reorders within each split; clumps of consecutive rows stay together; filter first", async () => {
    const { t, idOf } = await source(12);
    const s = await rowsOf(await permutationBuilder(t).shuffle({ seed: 3, clumpSize: 3 }).execute());
    const ids = s.map((r) => idOf.get(r.rowId) ?? 0);
    expect([...ids].sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    for (let i = 0; i < 12; i += 3) {
      expect(ids[i] % 3).toBe(1);
      expect([ids[i + 1], ids[i + 2]]).toEqual([ids[i] + 1, ids[i] + 2]);
    }
    const f = await rowsOf(await permutationBuilder(t).filter("value > 50").filter("id < 10").execute());
    expect(f.map((r) => idOf.get(r.rowId))).toEqual([6, 7, 8, 9]);
  });

  test("persist creates the named table in the connection; split names are recorded", async () => {
    const { db, t } = await source(4);
    const p = await permutationBuilder(t)
      .splitSequential({ counts: [1, 3], splitNames: ["train", "test"] })
      .persist(db, "perm")
      .execute();
    const again = await db.openTable("perm");
    expect(await again.countRows()).toBe(4);
    expect((await again.schema()).metadata.get("split_names")).toBe('["train","test"]');
    expect(await p.countRows("split_id = 1")).toBe(3);
    await expect(permutationBuilder(t).persist(db, "perm").execute()).rejects.toThrow(/already exists/);
  });

  test("refusals: split sizes, a builder run twice, a bad filter", async () => {
    const { t } = await source(5);
    expect(() => permutationBuilder(t).splitRandom({})).toThrow("Exactly one of 'ratios', 'counts', or 'fixed' must be provided");
    expect(() => permutationBuilder(t).splitSequential({ ratios: [1], fixed: 2 })).toThrow(/Exactly one of/);
    await expect(
      permutationBuilder(t)
        .splitRandom({ ratios: [0.7, 0.7] })
        .execute(),
    ).rejects.toThrow("Split percentages must sum to 1.0 or less");
    await expect(
      permutationBuilder(t)
        .splitRandom({ ratios: [-0.1] })
        .execute(),
    ).rejects.toThrow(/between 0.0 and 1.0/);
    await expect(
      permutationBuilder(t)
        .splitSequential({ counts: [9] })
        .execute(),
    ).rejects.toThrow("Split counts specified 9 rows but only 5 are available");
    await expect(
      permutationBuilder(t)
        .splitHash({ columns: [], splitWeights: [1] })
        .execute(),
    ).rejects.toThrow("Hash strategy requires at least one column");
    await expect(permutationBuilder(t).filter("nope > 1").execute()).rejects.toThrow(InvalidInputError);
    const b = permutationBuilder(t);
    await b.execute();
    await expect(b.execute()).rejects.toThrow("Builder already consumed");
  });
});
