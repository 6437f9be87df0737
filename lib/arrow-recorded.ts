/**
 * The arrow helpers given a schema that records embedding functions (the schema metadata key
 * `embedding_functions`, as a table's schema does), as 0.39 handles it: the result has every column of the
 * schema (a missing one null, a missing struct one of nulls in rows and in `fromDataToBuffer`'s tables, null in
 * `from*TableTo*Buffer`'s), in its order and with its types, and each recorded function (made from the registry)
 * computes its vector column when no row gives it. Given in some rows only is refused (0.39 would store null
 * for the others); an Arrow column whose type is not the schema's is refused (0.39 would relabel it).
 */
import { Table as ArrowTable, RecordBatch, Schema } from "apache-arrow";

import { buildTable } from "./arrow-infer";
import { ensureNestedFieldsExist } from "./arrow-json";
import { embedData, recordedEntries, recordedSlots } from "./embedding/apply";
import { EMBEDDING_METADATA_KEY } from "./embedding/registry";
import { invalid } from "./errors";

type Rows = Array<Record<string, unknown>>;

/** Whether 0.39 takes its recorded-functions path for `schema`. */
export function recordsFunctions(schema: Schema | undefined): schema is Schema {
  return schema?.metadata.has(EMBEDDING_METADATA_KEY) ?? false;
}

/** An `embeddings` config given with such a schema must be one it records (0.39 uses only the recorded ones). */
export function checkGivenConfig(what: string, schema: Schema, embeddings: unknown): void {
  if (embeddings === undefined || embeddings === null) return;
  const vc = (embeddings as { vectorColumn?: unknown }).vectorColumn ?? "vector";
  if (!recordedEntries(schema).some((e) => e.vectorColumn === vc))
    throw invalid(
      `${what}: the schema records its embedding functions (embedding_functions), which @lancedb/lancedb uses instead of the one given, and none fills '${String(vc)}'; drop one of the two`,
    );
}

/** Rows as a table of every column of `schema`, the recorded functions' vectors computed. */
export async function recordedRowsTable(rows: Rows, schema: Schema): Promise<ArrowTable> {
  const embedded = (await embedData(rows, recordedSlots(schema), schema)) as Rows;
  return buildTable(ensureNestedFieldsExist(embedded, schema), schema);
}

/**
 * An Arrow table as `schema`: its columns checked and ordered as the schema's (others left out, as 0.39 does),
 * missing ones null (`validStructs`: a missing struct is one of nulls), the recorded functions' vectors computed.
 */
export async function recordedArrowTable(t: ArrowTable, schema: Schema, validStructs: boolean): Promise<ArrowTable> {
  // The vectors first: a vector column the data lacks is computed, not filled with nulls.
  const done = (await embedData(t, recordedSlots(schema), schema)) as ArrowTable;
  const names = done.schema.names.map(String);
  const missing = schema.fields.filter((f) => !names.includes(f.name));
  const keys = missing.map((f) => f.name);
  const blank = Array.from({ length: done.numRows }, () => (validStructs ? {} : Object.fromEntries(keys.map((k) => [k, null]))));
  let all = done;
  if (missing.length > 0 && done.numRows === 0) all = done.assign(new ArrowTable(new Schema(missing)));
  else if (missing.length > 0)
    all = done.assign(
      buildTable(
        ensureNestedFieldsExist(blank, schema).map((r) => pick(r, keys)),
        schema,
      ),
    );
  const out = all.select(schema.fields.map((f) => f.name));
  schema.fields.forEach((f, i) => {
    const got = out.schema.fields[i].type;
    if (String(got) !== String(f.type)) throw invalid(`column '${f.name}' is ${got} in the data but ${f.type} in the schema`);
  });
  return new ArrowTable(
    schema,
    out.batches.map((b) => new RecordBatch(schema, b.data)),
  );
}

/** `r` with only the keys `keys`. */
function pick(r: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  return Object.fromEntries(keys.map((k) => [k, r[k]]));
}
