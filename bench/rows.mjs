// The benchmark rows, shared by worker.mjs and soak.mjs: id int64, a float64, a 16-char utf8 and a `dim`-d
// float32 vector, from a seeded mulberry32 (the old `(seed * 1103515245 + 12345) & 0x7fffffff` lost bits in
// float arithmetic and cycled within ~5k values, so "random" vectors repeated). `arrow` is the caller's
// apache-arrow (the peer's 18.1 in worker.mjs, the package's 21 in soak.mjs).

/** `{ rnd, table }`: the seeded generator, and `table(ids)` making an Arrow Table of those rows with it. */
export function rowMaker(arrow, dim, seed = 42) {
  const { Field, FixedSizeList, Float32, Table, Utf8, makeData, makeVector, vectorFromArray } = arrow;
  let s = seed;
  const rnd = () => {
    s = (s + 0x6d2b79f5) | 0;
    let t = Math.imul(s ^ (s >>> 15), 1 | s);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const table = (ids) => {
    const n = ids.length;
    const floats = new Float32Array(n * dim);
    for (let i = 0; i < floats.length; i++) floats[i] = rnd();
    const fsl = new FixedSizeList(dim, new Field("item", new Float32(), true));
    const child = makeData({ type: new Float32(), length: n * dim, data: floats });
    return new Table({
      id: makeVector(BigInt64Array.from(ids, (x) => BigInt(x))),
      a: makeVector(Float64Array.from(ids, () => rnd())),
      s: vectorFromArray(
        ids.map((x) => `s-${String(x).padStart(14, "0")}`.slice(0, 16)),
        new Utf8(),
      ),
      vec: makeVector(makeData({ type: fsl, length: n, nullCount: 0, child })),
    });
  };
  return { rnd, table };
}
