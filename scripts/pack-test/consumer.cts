// Type-checks a CommonJS TypeScript consumer against the installed package's types (never run).
import memwal = require("memwal");
import arrowHelpers = require("memwal/arrow");

export async function use(uri: string): Promise<number> {
  const db: memwal.Connection = await memwal.connect(uri);
  const t = await db.createTable("t", arrowHelpers.makeArrowTable([{ id: 1 }]));
  return t.countRows();
}
