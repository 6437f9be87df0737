/**
 * IVF_RQ (0.39's `Index.ivfRq`): built, listed, searched, folded and refused as @lancedb/lancedb names it, on a
 * local folder, in memory and on the served table. Answers are checked against an exact search of the same rows
 * (`bypassVectorIndex`), never against fixed ids.
 */
import { Index, InvalidInputError } from "../lib";
import { seeded, tableKinds } from "./helpers";

const { kinds } = tableKinds();

/** Rows in 24 Gaussian-ish clusters of 32-d vectors. */
function clustered(n: number, seed: number, from = 0): Array<{ id: number; vector: number[] }> {
  const rnd = seeded(seed);
  const centres = Array.from({ length: 24 }, () => Array.from({ length: 32 }, () => (rnd() - 0.5) * 12));
  const noise = () => (rnd() + rnd() + rnd() - 1.5) * 2;
  return Array.from({ length: n }, (_, i) => ({
    id: from + i,
    vector: centres[i % 24].map((c) => c + noise()),
  }));
}

async function ids(q: { toArray(): Promise<Array<Record<string, unknown>>> }): Promise<number[]> {
  return (await q.toArray()).map((r) => Number(r.id));
}

describe.each(kinds)("IVF_RQ on a %s table", (_kind, open) => {
  test("built with numBits, listed as IvfRq, searched within the exact answer's reach", async () => {
    const db = await open();
    const name = `rq_${Math.floor(Math.random() * 1e9)}`;
    const rows = clustered(3000, 7);
    const t = await db.createTable(name, rows);
    await t.createIndex("vector", { config: Index.ivfRq({ numPartitions: 16, numBits: 4, distanceType: "l2" }) });
    const listed = await t.listIndices();
    expect(listed.map((i) => [i.name, i.indexType, i.columns])).toEqual([["vector_idx", "IvfRq", ["vector"]]]);
    const stats = await t.indexStats("vector_idx");
    expect(stats?.indexType).toBe("IVF_RQ");
    expect(stats?.numIndexedRows).toBe(3000);
    let hit = 0;
    for (const q of clustered(20, 99)) {
      const exact = await ids(t.search(q.vector).limit(10).bypassVectorIndex());
      const got = await ids(t.search(q.vector).limit(10).nprobes(16).refineFactor(5));
      hit += got.filter((id) => exact.includes(id)).length;
    }
    // 4 bits and every partition probed: the re-ranked answer is the exact one but for rare ties.
    expect(hit / 200).toBeGreaterThanOrEqual(0.97);
    // A row added after the build is found before and after it is folded in.
    const late = clustered(1, 123, 10_000)[0];
    await t.add([late]);
    expect((await ids(t.search(late.vector).limit(1).refineFactor(5)))[0]).toBe(10_000);
    await t.optimize();
    expect((await t.indexStats("vector_idx"))?.numUnindexedRows).toBe(0);
    expect((await ids(t.search(late.vector).limit(1).nprobes(16).refineFactor(5)))[0]).toBe(10_000);
    await db.dropTable(name);
  });

  test("bad options are refused by name and build nothing", async () => {
    const db = await open();
    const name = `rq_bad_${Math.floor(Math.random() * 1e9)}`;
    const t = await db.createTable(name, clustered(300, 3));
    await expect(t.createIndex("vector", { config: Index.ivfRq({ numBits: 10 }) })).rejects.toThrow(
      /num_bits for IVF_RQ must be 1 to 9, got 10/,
    );
    await expect(t.createIndex("vector", { config: Index.ivfRq({ numBits: 0 }) })).rejects.toThrow(/num_bits/);
    expect(() => Index.ivfRq({ numSubVectors: 2 } as never)).toThrow(InvalidInputError);
    expect(await t.listIndices()).toEqual([]);
    await db.dropTable(name);
  });
});
