/**
 * `memwal/arrow`: what `@lancedb/lancedb/arrow` (0.39) exports, so code ported from LanceDB changes only its
 * import specifiers. All of apache-arrow (our 21) plus LanceDB's helpers: `makeArrowTable` (rows -> Arrow
 * table, types inferred as 0.39 documents, or from a schema), the empty-table helpers, the IPC buffer helpers,
 * and the type predicates. Schemas, tables and types of another apache-arrow copy (15 to 21) are accepted.
 *
 * Where 0.39 silently changes data, memwal refuses with an InvalidInputError naming the column and row: a
 * value that does not fit its schema type (0.39 turns "x" into 0 in an Int32 column), a vector of the wrong
 * length (0.39 truncates it), a non-number in a vector column, rows that are not objects. Date values are
 * inferred as Timestamp(ms) (0.39 cannot infer them). The async helpers take an embedding function config
 * (`{ function, sourceColumn, vectorColumn? }`, memwal/embedding) and compute the vector column it lacks;
 * makeArrowTable, synchronous, cannot run one: its `embeddings` / `embeddingFunction` options are a
 * NotSupportedError, never ignored. Given a schema that records functions (a table's), the async helpers do as
 * 0.39: every schema column, the recorded functions' vectors computed (lib/arrow-recorded.ts).
 */
import {
  Table as ArrowTable,
  type Binary,
  type Bool,
  type DataType,
  type Date_,
  type Decimal,
  type Duration,
  Field,
  type FixedSizeBinary,
  FixedSizeList,
  type Float,
  Float32,
  type Int,
  type Interval,
  type LargeBinary,
  type LargeUtf8,
  type List,
  type Null,
  RecordBatch,
  Schema,
  type Struct,
  type Time,
  type Timestamp,
  Type,
  tableFromIPC,
  tableToIPC,
  type Union,
  type Utf8,
} from "apache-arrow";

import { buildTable, describe, inferSchema, toSchema } from "./arrow-infer";
import { checkGivenConfig, recordedArrowTable, recordedRowsTable, recordsFunctions } from "./arrow-recorded";
import { configOption, prepareCreate } from "./embedding/apply";
import type { EmbeddingFunction } from "./embedding/embedding_function";
import type { EmbeddingFunctionConfig } from "./embedding/registry";
import { invalid, notSupported } from "./errors";
import { ourTable, ourType } from "./foreign";
import type { IntoVector } from "./query";

export * from "apache-arrow";
export { dataTypeToJson, ensureNestedFieldsExist, type JsonDataType, type JsonField } from "./arrow-json";

/** A schema: an apache-arrow Schema (of any copy) or a plain object with fields. */
export type SchemaLike = Schema | { fields: FieldLike[]; metadata: Map<string, string>; get names(): unknown[] };
/** A field: an apache-arrow Field or `{ name, type, nullable }` (type: a DataType or a name such as "int32"). */
export type FieldLike = Field | { type: string | DataType; name: string; nullable: boolean; metadata?: Map<string, string> };
/** Column data of any apache-arrow copy, read by its fields. */
export type DataLike =
  | import("apache-arrow").Data
  | {
      type: unknown;
      length: number;
      offset: number;
      stride: number;
      nullable: boolean;
      children: DataLike[];
      dictionary?: { data: readonly DataLike[] };
      get nullCount(): number;
      values: unknown;
      typeIds: unknown;
      nullBitmap: unknown;
      valueOffsets: unknown;
    };
/** A RecordBatch of any apache-arrow copy. */
export type RecordBatchLike = RecordBatch | { schema: SchemaLike; data: DataLike };
/** A Table of any apache-arrow copy. */
export type TableLike = ArrowTable | { schema: SchemaLike; batches: RecordBatchLike[] };
/** A query vector, in the forms memwal's `nearestTo` takes. */
export type { IntoVector };
/** Several query vectors (one search each). */
export type MultiVector = IntoVector[];
/** Rows as 0.39's helpers take them: plain objects or an Arrow table. */
export type Data = Record<string, unknown>[] | TableLike;

/** The element type of a vector column. */
export class VectorColumnOptions {
  /** Vector column type (default Float32). */
  type: Float = new Float32();
  constructor(values?: Partial<VectorColumnOptions>) {
    if (values?.type !== undefined) this.type = values.type;
  }
}

/** The `vector` entry MakeArrowTableOptions starts with (a typed array in that column keeps its own type). */
const DEFAULT_VECTOR_OPTIONS = new WeakSet<object>();

function defaultVectorOptions(): VectorColumnOptions {
  const o = new VectorColumnOptions();
  DEFAULT_VECTOR_OPTIONS.add(o);
  return o;
}

/** Options of {@link makeArrowTable}. */
export class MakeArrowTableOptions {
  /** The column types; without it they are inferred. */
  schema?: SchemaLike;
  /** Columns whose number arrays are vectors, with their element type (`vector` is one by default). */
  vectorColumns: Record<string, VectorColumnOptions> = { vector: defaultVectorOptions() };
  /** makeArrowTable cannot run an embedding function (NotSupportedError): use convertToTable. */
  embeddings?: EmbeddingFunction<unknown>;
  /** makeArrowTable cannot run an embedding function (NotSupportedError): pass it to convertToTable. */
  embeddingFunction?: EmbeddingFunctionConfig;
  /** Strings as Dictionary<Int32, Utf8> when inferring (ignored when `schema` is given, as in 0.39). */
  dictionaryEncodeStrings = false;
  constructor(values?: Partial<MakeArrowTableOptions>) {
    if (values !== undefined) Object.assign(this, values);
  }
}

function refuseEmbeddings(what: string, embeddings: unknown): void {
  if (embeddings !== undefined && embeddings !== null) {
    throw notSupported(
      `${what}: an embedding function cannot run in this synchronous call; use convertToTable(data, { function, sourceColumn }, options)`,
    );
  }
}

/** The element types of the vector columns of `opts`, each checked to be a numeric apache-arrow type. */
function vectorTypes(cols: Record<string, unknown> | undefined): Map<string, DataType> {
  const out = new Map<string, DataType>([["vector", new Float32()]]);
  for (const [name, o] of Object.entries(cols ?? {})) {
    const t = typeof o === "object" && o !== null ? (o as { type?: unknown }).type : undefined;
    const type = t === undefined || t === null ? new Float32() : ourType(t);
    if (type.typeId !== Type.Float && type.typeId !== Type.Int) {
      throw invalid(`vectorColumns.${name}.type must be a float (or integer) type, got ${type}`);
    }
    out.set(name, type);
  }
  return out;
}

function checkRows(what: string, data: unknown): ReadonlyArray<Record<string, unknown>> {
  if (!Array.isArray(data)) throw invalid(`${what}: data must be an array of objects, got ${describe(data)}`);
  data.forEach((r, i) => {
    if (typeof r !== "object" || r === null || Array.isArray(r) || ArrayBuffer.isView(r)) {
      throw invalid(`${what}: row ${i} is ${describe(r)}, not an object`);
    }
  });
  return data;
}

/**
 * Rows (plain objects) as an Arrow table, as 0.39's makeArrowTable. With `options.schema` its columns are
 * used, in its order: those some row gives a value other than undefined, a struct cut to the fields some row
 * gives (a row without it has a struct of nulls); without it types are inferred and every field is nullable:
 * boolean -> Bool, number -> Float64, bigint -> Int64, string -> Utf8 (Dictionary<Int32, Utf8> with
 * `dictionaryEncodeStrings`), Date -> Timestamp(ms), Buffer -> Binary, a typed array -> FixedSizeList of its
 * element type, an array of numbers in a vector column (`vector`, any name containing "vector" or
 * "embedding", or one of `vectorColumns`) -> FixedSizeList of Float32 (or the column's `type`), other arrays
 * -> List of their items' type, an object -> Struct (recursively; keys missing in some rows are nulls).
 * `metadata` is added to the schema's metadata. No rows needs a schema (an empty table).
 */
export function makeArrowTable(
  data: Array<Record<string, unknown>>,
  options?: Partial<MakeArrowTableOptions>,
  metadata?: Map<string, string>,
): ArrowTable {
  refuseEmbeddings("makeArrowTable", options?.embeddings);
  refuseEmbeddings("makeArrowTable", options?.embeddingFunction);
  const rows = checkRows("makeArrowTable", data);
  const given = options?.schema === undefined || options.schema === null ? undefined : toSchema(options.schema);
  if (rows.length === 0) {
    if (given === undefined) throw invalid("makeArrowTable: no rows and no schema; at least one record or a schema is needed");
    return makeEmptyTable(given, metadata);
  }
  const schema =
    given ??
    inferSchema(rows, {
      vectorTypes: vectorTypes(options?.vectorColumns),
      explicitVectors: new Set(
        Object.entries(options?.vectorColumns ?? {})
          .filter(([, o]) => !(typeof o === "object" && o !== null && DEFAULT_VECTOR_OPTIONS.has(o)))
          .map(([k]) => k),
      ),
      dictionaryEncodeStrings: Boolean(options?.dictionaryEncodeStrings),
    });
  return buildTable(rows, schema, metadata);
}

/** An empty Arrow table of `schema` (an apache-arrow Schema of any copy or a plain one), plus `metadata`. */
export function makeEmptyTable(schema: SchemaLike, metadata?: Map<string, string>): ArrowTable {
  const s = toSchema(schema);
  if (metadata === undefined || metadata.size === 0) return new ArrowTable(s);
  return new ArrowTable(toSchema(new Schema(s.fields, new Map([...s.metadata, ...metadata]))));
}

/** An empty Arrow table of `schema`. */
export function createEmptyTable(schema: Schema): ArrowTable {
  return makeEmptyTable(schema);
}

/**
 * `t` with the vector column of `embeddings` computed from its source column (appended, or typed as `schema`
 * says) and the function recorded in the metadata, as createTable's `embeddingFunction` does; `t` without one.
 */
async function embedInto(what: string, t: ArrowTable, embeddings: unknown, schema?: Schema): Promise<ArrowTable> {
  if (embeddings === undefined || embeddings === null) return t;
  const cfg = configOption(`${what}(embeddings)`, embeddings);
  const has = (n: string) => t.schema.fields.some((f) => f.name === n);
  if (!has(cfg.sourceColumn) && !has(cfg.vectorColumn)) {
    throw invalid(
      `${what}: cannot apply embedding function because the source column '${cfg.sourceColumn}' was not present in the data (columns: ${t.schema.names.join(", ")})`,
    );
  }
  // As 0.39: a vector the schema has no column for is refused when it would be computed (the data lacks it, or it
  // is null in every row), not appended outside the schema.
  const vec = t.getChild(cfg.vectorColumn);
  const computes = vec === null || (t.numRows > 0 && vec.nullCount === vec.length);
  if (schema !== undefined && computes && !schema.fields.some((f) => f.name === cfg.vectorColumn))
    throw invalid(
      `${what}: When using embedding functions and specifying a schema the schema should include the embedding column but the column ${cfg.vectorColumn} was missing`,
    );
  const out = (await prepareCreate(t, schema, cfg)).data as ArrowTable;
  if (schema === undefined) return out;
  // The schema's columns in its order (the computed one included), as makeArrowTable orders them.
  const names = out.schema.names.map(String);
  const order = [...schema.names.map(String).filter((n) => names.includes(n)), ...names.filter((n) => !schema.names.includes(n))];
  return out.select(order);
}

/** Rows with some vectors given and some not: the function would fill none of them (the column exists). */
function checkVectorColumn(what: string, rows: ReadonlyArray<Record<string, unknown>>, embeddings: unknown): void {
  const vc =
    typeof embeddings === "object" && embeddings !== null
      ? ((embeddings as { vectorColumn?: unknown }).vectorColumn ?? "vector")
      : undefined;
  if (typeof vc !== "string") return;
  const given = rows.filter((r) => r[vc] !== undefined && r[vc] !== null).length;
  if (given > 0 && given < rows.length) {
    throw invalid(
      `${what}: ${given} of ${rows.length} rows have the vector column '${vc}'; give it in every row or in none (then it is computed)`,
    );
  }
}

/**
 * Rows as an Arrow table (makeArrowTable with `makeTableOptions`), then, with `embeddings` (`{ function,
 * sourceColumn, vectorColumn? = "vector" }`), its vector column computed from the source column: at the end,
 * or where `makeTableOptions.schema` puts it (with that type).
 */
export async function convertToTable(
  data: Array<Record<string, unknown>>,
  embeddings?: EmbeddingFunctionConfig,
  makeTableOptions?: Partial<MakeArrowTableOptions>,
): Promise<ArrowTable> {
  const given = makeTableOptions?.schema;
  const schema = given === undefined || given === null ? undefined : toSchema(given);
  if (recordsFunctions(schema)) {
    refuseEmbeddings("convertToTable(makeTableOptions)", makeTableOptions?.embeddings ?? makeTableOptions?.embeddingFunction);
    checkGivenConfig("convertToTable", schema, embeddings);
    const rows = checkRows("convertToTable", data) as Array<Record<string, unknown>>;
    return rows.length === 0 ? makeEmptyTable(schema) : recordedRowsTable(rows, schema);
  }
  const t = makeArrowTable(data, makeTableOptions);
  if (embeddings === undefined || embeddings === null) return t;
  checkVectorColumn("convertToTable", data, embeddings);
  return embedInto("convertToTable", t, embeddings, schema);
}

/** The Arrow type of a vector column: `dim` values of `innerType` (a float type of any apache-arrow copy). */
export function newVectorType<T extends Float>(dim: number, innerType: unknown): FixedSizeList<T> {
  if (!Number.isSafeInteger(dim) || dim <= 0) throw invalid(`newVectorType: dim must be a positive integer, got ${describe(dim)}`);
  return new FixedSizeList(dim, new Field("item", ourType(innerType) as T, true));
}

/** Bytes as a Buffer, without a copy. */
function asBuffer(u8: Uint8Array): Buffer {
  return Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
}

/**
 * The table to write: ours, its vectors computed with `embeddings`; an empty one takes `schema` when given
 * (0.39: "schema is required if the table is empty").
 */
async function tableToWrite(
  what: string,
  table: unknown,
  embeddings: unknown,
  schema?: SchemaLike,
  validStructs = false,
): Promise<ArrowTable> {
  if (!isArrowTable(table)) throw invalid(`${what}: expected an apache-arrow Table, got ${describe(table)}`);
  const t = ourTable(table);
  const s = schema === undefined || schema === null ? undefined : toSchema(schema);
  if (recordsFunctions(s)) {
    checkGivenConfig(what, s, embeddings);
    return recordedArrowTable(t, s, validStructs);
  }
  return embedInto(what, t.numRows === 0 && s !== undefined ? makeEmptyTable(s) : t, embeddings, s);
}

/** Rows as Arrow IPC file bytes (convertToTable with `embeddings` and `schema`); no rows needs a schema. */
export async function fromRecordsToBuffer(
  data: Array<Record<string, unknown>>,
  embeddings?: EmbeddingFunctionConfig,
  schema?: Schema,
): Promise<Buffer> {
  return asBuffer(tableToIPC(await convertToTable(data, embeddings, { schema }), "file"));
}

/** Rows as Arrow IPC stream bytes (convertToTable with `embeddings` and `schema`); no rows needs a schema. */
export async function fromRecordsToStreamBuffer(
  data: Array<Record<string, unknown>>,
  embeddings?: EmbeddingFunctionConfig,
  schema?: Schema,
): Promise<Buffer> {
  return asBuffer(tableToIPC(await convertToTable(data, embeddings, { schema }), "stream"));
}

/** An Arrow table (of any apache-arrow copy) as IPC file bytes, vectors computed with `embeddings`. */
export async function fromTableToBuffer(table: ArrowTable, embeddings?: EmbeddingFunctionConfig, schema?: SchemaLike): Promise<Buffer> {
  return asBuffer(tableToIPC(await tableToWrite("fromTableToBuffer", table, embeddings, schema), "file"));
}

/** An Arrow table (of any apache-arrow copy) as IPC stream bytes, vectors computed with `embeddings`. */
export async function fromTableToStreamBuffer(
  table: ArrowTable,
  embeddings?: EmbeddingFunctionConfig,
  schema?: SchemaLike,
): Promise<Buffer> {
  return asBuffer(tableToIPC(await tableToWrite("fromTableToStreamBuffer", table, embeddings, schema), "stream"));
}

/** Rows or an Arrow table as IPC file bytes. */
export async function fromDataToBuffer(data: Data, embeddings?: EmbeddingFunctionConfig, schema?: Schema): Promise<Buffer> {
  // A table as a schema recording functions: its missing structs are ones of nulls (0.39's alignTableToSchema).
  if (isArrowTable(data)) return asBuffer(tableToIPC(await tableToWrite("fromDataToBuffer", data, embeddings, schema, true), "file"));
  return fromRecordsToBuffer(checkRows("fromDataToBuffer", data) as Array<Record<string, unknown>>, embeddings, schema);
}

/** The first record batch in Arrow IPC bytes (file or stream), or null when there is none. */
export async function fromBufferToRecordBatch(data: Buffer): Promise<RecordBatch | null> {
  if (!(data instanceof Uint8Array)) throw invalid(`fromBufferToRecordBatch: expected a Buffer, got ${describe(data)}`);
  try {
    const first = tableFromIPC(data).batches[0];
    // apache-arrow stands a placeholder batch (a subclass, no rows) in for a stream without batches.
    return first === undefined || (first.numRows === 0 && first.constructor !== RecordBatch) ? null : first;
  } catch (e) {
    throw invalid(`fromBufferToRecordBatch: not Arrow IPC bytes: ${(e as Error).message}`, e);
  }
}

function batchTable(what: string, batch: unknown): ArrowTable {
  if (typeof batch !== "object" || batch === null || !("schema" in batch) || !("data" in batch)) {
    throw invalid(`${what}: expected an apache-arrow RecordBatch, got ${describe(batch)}`);
  }
  return ourTable(batch);
}

/** One record batch (of any apache-arrow copy) as Arrow IPC file bytes. */
export async function fromRecordBatchToBuffer(batch: RecordBatch): Promise<Buffer> {
  return asBuffer(tableToIPC(batchTable("fromRecordBatchToBuffer", batch), "file"));
}

/** One record batch as self-contained Arrow IPC stream bytes (schema, batch, end of stream). */
export async function fromRecordBatchToStreamBuffer(batch: RecordBatch): Promise<Buffer> {
  return asBuffer(tableToIPC(batchTable("fromRecordBatchToStreamBuffer", batch), "stream"));
}

/** True for an apache-arrow Table of any copy (an object with a schema and an array of batches). */
export function isArrowTable(value: unknown): value is TableLike {
  if (value instanceof ArrowTable) return true;
  return typeof value === "object" && value !== null && "schema" in value && "batches" in value && Array.isArray(value.batches);
}

/** True for a query vector: an array of numbers, a Float32Array or a Float64Array. */
export function isIntoVector(value: unknown): value is IntoVector {
  if (value instanceof Float32Array || value instanceof Float64Array) return true;
  return Array.isArray(value) && value.length > 0 && value.every((x) => typeof x === "number");
}

/** True for a non-empty array of query vectors. */
export function isMultiVector(value: unknown): value is MultiVector {
  return Array.isArray(value) && value.length > 0 && value.every(isIntoVector);
}

/**
 * The bytes and element type of a Float64Array or Uint8Array vector (to pass it on without a lossy cast to
 * float32); null for a Float32Array (already the default element type) and for anything else, as in 0.39.
 */
export function extractVectorBuffer(vector: Float32Array | Float64Array | Uint8Array): { data: Uint8Array; dtype: string } | null {
  const bytes = (v: ArrayBufferView) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);
  if (vector instanceof Float64Array) return { data: bytes(vector), dtype: "float64" };
  if (vector instanceof Uint8Array && !Buffer.isBuffer(vector)) return { data: bytes(vector), dtype: "uint8" };
  return null;
}

/** The type id of an apache-arrow DataType of any copy, or undefined. */
function typeIdOf(value: unknown): number | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const id = (value as { typeId?: unknown }).typeId;
  return typeof id === "number" ? id : undefined;
}

const typeIs =
  <T>(...ids: Type[]) =>
  (value: unknown): value is T => {
    const id = typeIdOf(value);
    return id !== undefined && ids.includes(id);
  };

export const isNull = typeIs<Null>(Type.Null);
export const isInt = typeIs<Int>(Type.Int);
export const isFloat = typeIs<Float>(Type.Float);
export const isBinary = typeIs<Binary>(Type.Binary);
export const isLargeBinary = typeIs<LargeBinary>(Type.LargeBinary);
export const isUtf8 = typeIs<Utf8>(Type.Utf8);
export const isLargeUtf8 = typeIs<LargeUtf8>(Type.LargeUtf8);
export const isBool = typeIs<Bool>(Type.Bool);
export const isDecimal = typeIs<Decimal>(Type.Decimal);
export const isDate = typeIs<Date_>(Type.Date);
export const isTime = typeIs<Time>(Type.Time);
export const isTimestamp = typeIs<Timestamp>(Type.Timestamp);
export const isInterval = typeIs<Interval>(Type.Interval);
export const isDuration = typeIs<Duration>(Type.Duration);
export const isList = typeIs<List>(Type.List);
export const isStruct = typeIs<Struct>(Type.Struct);
export const isUnion = typeIs<Union>(Type.Union, Type.DenseUnion, Type.SparseUnion);
export const isFixedSizeBinary = typeIs<FixedSizeBinary>(Type.FixedSizeBinary);
export const isFixedSizeList = typeIs<FixedSizeList>(Type.FixedSizeList);
