// CommonJS consumer of the installed tarball: require() of each entry point, and a local folder table.
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { connect } = require("memwal");
const { makeArrowTable } = require("memwal/arrow");
require("memwal/embedding");
if (typeof require("memwal/embedding/openai").OpenAIEmbeddingFunction !== "function") throw new Error("memwal/embedding/openai");
if (require("memwal/util").toSQL("it's") !== "'it''s'") throw new Error("memwal/util: toSQL");
if (String(require("memwal/sanitize").sanitizeType("int8")) !== "Int8") throw new Error("memwal/sanitize");

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "memwal-smoke-"));
  const db = await connect(dir);
  const t = await db.createTable("t", makeArrowTable([{ id: 1, s: "a" }]));
  await t.add([{ id: 2, s: "b" }]);
  const n = await t.countRows("s = 'b'");
  if (n !== 1) throw new Error(`CJS smoke: ${n} rows match, want 1`);
  fs.rmSync(dir, { recursive: true, force: true });
  console.log("CJS smoke ok");
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
