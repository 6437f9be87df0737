// Type-checks an ESM TypeScript consumer against the installed package's types (never run).
import { type Connection, connect, type MergeResult, type Table } from "memwal";
import { makeArrowTable } from "memwal/arrow";
import { type EmbeddingFunction, getRegistry } from "memwal/embedding";
import { sanitizeSchema } from "memwal/sanitize";
import { type IntoSql, toSQL } from "memwal/util";

export const literal = (v: IntoSql): string => toSQL(v);
export const schemaOf = sanitizeSchema;

export async function use(uri: string): Promise<MergeResult> {
  const db: Connection = await connect(uri);
  const t: Table = await db.createTable("t", makeArrowTable([{ id: 1 }]));
  const f: EmbeddingFunction | undefined = undefined;
  void f;
  void getRegistry();
  return t
    .mergeInsert("id")
    .whenMatchedUpdateAll()
    .whenNotMatchedInsertAll()
    .memWal()
    .execute([{ id: 2 }]);
}
