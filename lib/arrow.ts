/**
 * Data in and out of the addon. Everything a user may pass as rows (Arrow
 * IPC bytes in either format, an apache-arrow Table or RecordBatch, or an
 * array of plain objects) becomes Arrow IPC stream bytes here; query results
 * come back as apache-arrow Tables.
 */
import {
  Table as ArrowTable,
  Binary,
  Bool,
  type DataType,
  Field,
  FixedSizeList,
  Float32,
  Float64,
  Int64,
  List,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  TimestampMillisecond,
  Type,
  tableFromIPC,
  tableToIPC,
  Utf8,
  type Vector,
  Vector as VectorOf,
  vectorFromArray,
} from "apache-arrow";

import { invalid } from "./errors";
import { ourSchema, ourTable } from "./foreign";

/** Rows in any accepted form. */
export type Data = Buffer | Uint8Array | ArrowTable | RecordBatch | ReadonlyArray<Record<string, unknown>>;

function isTableLike(d: unknown): d is ArrowTable {
  return typeof d === "object" && d !== null && "schema" in d && "batches" in d && Array.isArray((d as ArrowTable).batches);
}

function isBatchLike(d: unknown): d is RecordBatch {
  return typeof d === "object" && d !== null && "schema" in d && "data" in d && "numRows" in d && !("batches" in d);
}

/**
 * The type of a column of JS arrays that are not all numbers, by @lancedb/lancedb 0.39's rule: a list of strings
 * or of booleans, its item type told by the first item that is not null (empty lists and null items say nothing);
 * any other mix is refused by name.
 */
function inferListType(name: string, values: unknown[]): DataType {
  const items = values.flatMap((x) => (Array.isArray(x) ? x.filter((i) => i !== null && i !== undefined) : []));
  if (items.length === 0) {
    throw invalid(`cannot infer the type of column '${name}': it holds only empty lists or nulls; pass a schema or an Arrow table`);
  }
  const kind = typeof items[0];
  const bad = items.find((i) => typeof i !== kind);
  if (bad !== undefined) {
    throw invalid(
      `cannot infer the type of column '${name}': its lists mix ${kind} and ${typeof bad} items; pass a schema or an Arrow table`,
    );
  }
  if (kind === "string") return new List(new Field("item", new Utf8(), true));
  if (kind === "boolean") return new List(new Field("item", new Bool(), true));
  throw invalid(`cannot infer the type of column '${name}' from lists of ${kind} items; pass a schema or an Arrow table`);
}

/** Infers a column type from JS values (numbers are float64, as in LanceDB). */
function inferType(name: string, values: unknown[]): DataType {
  // An empty list says nothing of its column's type: the first non-empty one does.
  const v =
    values.find((x) => x !== null && x !== undefined && !(Array.isArray(x) && x.length === 0)) ??
    values.find((x) => x !== null && x !== undefined);
  if (v === undefined) {
    throw invalid(`cannot infer the type of column '${name}': every value is null; pass a schema or an Arrow table`);
  }
  if (Array.isArray(v) && (v.length === 0 || !v.every((x) => typeof x === "number"))) return inferListType(name, values);
  if (typeof v === "bigint") return new Int64();
  if (typeof v === "number") return new Float64();
  if (typeof v === "string") return new Utf8();
  if (typeof v === "boolean") return new Bool();
  if (v instanceof Date) return new TimestampMillisecond();
  if (v instanceof Float32Array || (Array.isArray(v) && v.every((x) => typeof x === "number"))) {
    return new FixedSizeList((v as ArrayLike<number>).length, new Field("item", new Float32(), true));
  }
  if (v instanceof Uint8Array) return new Binary();
  throw invalid(`cannot infer the type of column '${name}' from a value of type ${typeof v}; pass an Arrow table`);
}

/** Checks every value fits the integer type (a wrapped or truncated value would be a silent change). */
function coerceInt(name: string, values: unknown[], type: DataType): unknown[] {
  const { bitWidth, isSigned } = type as unknown as { bitWidth: number; isSigned: boolean };
  const min = isSigned ? -(1n << BigInt(bitWidth - 1)) : 0n;
  const max = isSigned ? (1n << BigInt(bitWidth - 1)) - 1n : (1n << BigInt(bitWidth)) - 1n;
  return values.map((x) => {
    if (x === null || x === undefined) return null;
    let v: bigint;
    if (typeof x === "bigint") v = x;
    else if (typeof x === "number" && Number.isSafeInteger(x)) v = BigInt(x);
    else throw invalid(`column '${name}' is ${type} but got ${typeof x === "number" ? String(x) : (JSON.stringify(x) ?? String(x))}`);
    if (v < min || v > max) throw invalid(`column '${name}' is ${type}: the value ${v} is out of its range (${min} to ${max})`);
    return bitWidth === 64 ? v : Number(v);
  });
}

/** Converts JS values into what apache-arrow's builders expect for `type`. */
function coerce(name: string, values: unknown[], type: DataType): unknown[] {
  if (type.typeId === Type.Int) return coerceInt(name, values, type);
  if (type.typeId === Type.Float) {
    return values.map((x) => {
      if (x === null || x === undefined) return null;
      if (typeof x === "number") return x;
      throw invalid(`column '${name}' is ${type} but got ${typeof x === "bigint" ? `${x}n` : JSON.stringify(x)}`);
    });
  }
  if (type.typeId === Type.Timestamp || type.typeId === Type.Date) {
    return values.map((x) => (x instanceof Date ? x.getTime() : (x ?? null)));
  }
  if (type.typeId === Type.FixedSizeList) {
    const size = (type as FixedSizeList).listSize;
    return values.map((x) => {
      if (x === null || x === undefined) return null;
      const arr = Array.from(x as ArrayLike<number>);
      if (arr.length !== size) throw invalid(`column '${name}' needs ${size} values per row, got ${arr.length}`);
      return arr;
    });
  }
  return values.map((x) => (x === undefined ? null : x));
}

/**
 * A fixed-size list column with null rows. apache-arrow's builder gives a null row no child values, so the child
 * comes out shorter than rows x size and the IPC is malformed; here a null row holds `size` zeros behind its
 * validity bit, as the format wants.
 */
function fixedSizeListWithNulls(values: Array<number[] | null>, type: FixedSizeList): Vector {
  const size = type.listSize;
  const flat: number[] = [];
  const validity = new Uint8Array(Math.ceil(values.length / 8));
  let nulls = 0;
  values.forEach((v, i) => {
    if (v === null) {
      nulls += 1;
      for (let k = 0; k < size; k++) flat.push(0);
    } else {
      validity[i >> 3] |= 1 << (i & 7);
      flat.push(...v);
    }
  });
  const child = vectorFromArray(flat, type.children[0].type).data[0];
  return new VectorOf([makeData({ type, length: values.length, nullCount: nulls, nullBitmap: validity, child })]);
}

/** Builds an Arrow table from plain objects, with `schema` when known. */
export function rowsToTable(rows: ReadonlyArray<Record<string, unknown>>, schema?: Schema): ArrowTable {
  const names: string[] = [];
  const seen = new Set<string>();
  for (const r of rows) {
    if (typeof r !== "object" || r === null || Array.isArray(r)) {
      throw invalid(`rows must be plain objects, got ${JSON.stringify(r)}`);
    }
    // An `undefined` value is an absent key, as in 0.39: a key no row gives a value makes no column (so an
    // update leaves that column as it is, where a column of nulls would overwrite it).
    for (const [k, v] of Object.entries(r)) {
      if (v !== undefined && !seen.has(k)) {
        seen.add(k);
        names.push(k);
      }
    }
  }
  const fields = new Map<string, Field>((schema?.fields ?? []).map((f) => [f.name, f]));
  const columns: Record<string, Vector> = {};
  // With a schema, emit its columns in its order (those the rows have).
  const order = schema
    ? schema.fields
        .map((f) => f.name)
        .filter((n) => seen.has(n))
        .concat(names.filter((n) => !fields.has(n)))
    : names;
  for (const name of order) {
    const values = rows.map((r) => r[name]);
    const type = fields.get(name)?.type ?? inferType(name, values);
    try {
      const coerced = coerce(name, values, type);
      const nulls = fields.get(name)?.nullable === false ? coerced.filter((x) => x === null || x === undefined).length : 0;
      if (nulls > 0) throw invalid(`Column '${name}' is declared as non-nullable but contains null values (${nulls} in the data)`);
      columns[name] =
        type.typeId === Type.FixedSizeList && coerced.some((x) => x === null)
          ? fixedSizeListWithNulls(coerced as Array<number[] | null>, type as FixedSizeList)
          : vectorFromArray(coerced, type);
    } catch (e) {
      if (e instanceof Error && e.name === "InvalidInputError") throw e;
      throw invalid(`cannot convert column '${name}' to ${type}: ${(e as Error).message}`, e);
    }
  }
  if (order.length === 0) {
    // Rows that give no value at all (`{}`, every key undefined) would be written as nothing: refused, where 0.39
    // silently adds no row.
    if (rows.length > 0)
      throw invalid(`the rows give no values (every key is missing or undefined in all ${rows.length}): nothing to write`);
    if (!schema) throw invalid("no rows and no schema: cannot tell the columns");
    return new ArrowTable(schema);
  }
  const table = new ArrowTable(columns);
  return schema ? withDeclaredFields(table, fields) : table;
}

/** Refuses a row key the declared schema does not have, as 0.39's makeArrowTable does (its text). */
function checkKeysIn(rows: ReadonlyArray<Record<string, unknown>>, fields: Map<string, Field>): void {
  rows.forEach((r, i) => {
    for (const [k, v] of Object.entries(r)) {
      if (v !== undefined && !fields.has(k)) throw invalid(`Found field not in schema: ${k} at row ${i}`);
    }
  });
}

/**
 * `table` with the nullability and metadata its columns have in `declared` (the values are unchanged), so that a
 * table created from rows with a schema has that schema's non-nullable columns, as in 0.39.
 */
function withDeclaredFields(table: ArrowTable, declared: Map<string, Field>): ArrowTable {
  const out = table.schema.fields.map((f) => {
    const d = declared.get(f.name);
    return d === undefined ? f : new Field(f.name, f.type, d.nullable, d.metadata);
  });
  const schema = new Schema(out, table.schema.metadata);
  const batches = table.batches.map(
    (b) => new RecordBatch(schema, makeData({ type: new Struct(out), length: b.numRows, nullCount: 0, children: b.data.children })),
  );
  return new ArrowTable(schema, batches);
}

/** Any accepted data form -> Arrow IPC bytes for the addon. */
export function toBuffer(data: Data, schema?: Schema): Buffer {
  // Buffers view the bytes; none of these copies them.
  const view = (u8: Uint8Array) => Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof Uint8Array) return view(data);
  // A Table or RecordBatch of another apache-arrow copy (15 to 21) is rebuilt as ours first.
  if (isTableLike(data) || isBatchLike(data)) return view(tableToIPC(ourTable(data), "stream"));
  if (Array.isArray(data)) {
    const declared = schema === undefined ? undefined : ourSchema(schema);
    if (declared) checkKeysIn(data, new Map(declared.fields.map((f) => [f.name, f])));
    return view(tableToIPC(rowsToTable(data, declared), "stream"));
  }
  throw invalid("data must be an Arrow IPC Buffer/Uint8Array, an apache-arrow Table or RecordBatch, or an array of objects");
}

/** Arrow IPC bytes from the addon -> apache-arrow Table. */
export function fromBuffer(buf: Buffer): ArrowTable {
  return tableFromIPC(buf);
}

/** The schema in an IPC stream with no batches. */
export function schemaFromBuffer(buf: Buffer): Schema {
  return tableFromIPC(buf).schema;
}
