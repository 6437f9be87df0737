/**
 * apache-arrow objects made by another copy of apache-arrow (a service that pins 15 to 18.1 for
 * @lancedb/lancedb, or any other version beside ours) become ours, by value: types by their type id and
 * parameters, data by its buffers (no copy of the values), tables batch by batch, a dictionary shared by columns
 * or batches kept shared. The reading is `sanitize.ts`'s (0.39's checks); here its errors become
 * InvalidInputErrors naming what could not be read.
 */
import type { DataType, Field, Schema, Table } from "apache-arrow";

import { InvalidInputError, invalid } from "./errors";
import { sanitizeField, sanitizeSchema, sanitizeTable, sanitizeType } from "./sanitize";

// biome-ignore lint/suspicious/noExplicitAny: a foreign apache-arrow object is read by its fields.
type Foreign = any;

/** `read()`, its plain errors mapped to an InvalidInputError about `what`. */
function mapped<T>(what: string, read: () => T): T {
  try {
    return read();
  } catch (e) {
    if (e instanceof InvalidInputError) throw e;
    throw invalid(`cannot read ${what}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** Our Field for a field of any apache-arrow copy. */
export function ourField(f: Foreign): Field {
  return mapped("an apache-arrow Field", () => sanitizeField(f));
}

/** Our Schema for a schema of any apache-arrow copy. */
export function ourSchema(s: Foreign): Schema {
  return mapped("an apache-arrow Schema", () => sanitizeSchema(s));
}

/** Our DataType for a type of any apache-arrow copy (by its type id and parameters). */
export function ourType(t: Foreign): DataType {
  if (t === null || typeof t !== "object") throw invalid(`not an apache-arrow DataType: ${String(t)}`);
  return mapped("an apache-arrow DataType", () => sanitizeType(t));
}

/** Our Table for a Table or RecordBatch of any apache-arrow copy. */
export function ourTable(t: Foreign): Table {
  const table = t !== null && typeof t === "object" && !Array.isArray(t.batches) && "data" in t ? { schema: t.schema, batches: [t] } : t;
  return mapped("an apache-arrow Table", () => sanitizeTable(table));
}
