const m = require("/work/main/dist/lib/index.js");
(async () => {
  const db = await m.connect("memory://");
  const rows = Array.from({ length: 1000 }, (_, i) => ({ id: i, vector: Array.from({ length: 64 }, (_, j) => Math.sin(i * 3 + j)) }));
  const t = await db.createTable("t", rows);
  const b = t.search(rows[5].vector).limit(10);
  const native = b.table, opts = { ...b.opts };
  const what = process.argv[2];
  const s = process.hrtime.bigint();
  for (let i = 0; i < 20000; i++) what === "count" ? await native.countRows(null) : await native.query(opts);
  console.log(what, (Number(process.hrtime.bigint() - s) / 1e3 / 20000).toFixed(1), "us");
})();
