/**
 * `memwal/sanitize`: @lancedb/lancedb 0.39's `sanitize` module, for code that imports it. Each function turns an
 * apache-arrow object made by any copy of apache-arrow (15 to 21, or a plain object of the same shape) into one of
 * ours, read structurally (`instanceof` fails across copies), with 0.39's checks and 0.39's error texts.
 *
 * Within one call, an object met twice becomes one object: a dictionary shared by two columns or two batches stays
 * shared, so its IPC holds it once. Types 0.39 cannot read (LargeUtf8, LargeBinary) are read too: a superset.
 * `lib/foreign.ts` uses this module for every foreign object the API accepts, mapping its errors to
 * InvalidInputError.
 */
import {
  Binary,
  Bool,
  BufferType,
  Data,
  type DataType,
  Date_,
  DateDay,
  DateMillisecond,
  Decimal,
  DenseUnion,
  Dictionary,
  Duration,
  DurationMicrosecond,
  DurationMillisecond,
  DurationNanosecond,
  DurationSecond,
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Float,
  Float16,
  Float32,
  Float64,
  Int,
  Int8,
  Int16,
  Int32,
  Int64,
  Interval,
  IntervalDayTime,
  IntervalYearMonth,
  LargeBinary,
  LargeUtf8,
  List,
  Map_,
  Null,
  RecordBatch,
  Schema,
  SparseUnion,
  Struct,
  Table,
  Time,
  TimeMicrosecond,
  TimeMillisecond,
  TimeNanosecond,
  TimeSecond,
  Timestamp,
  TimestampMicrosecond,
  TimestampMillisecond,
  TimestampNanosecond,
  TimestampSecond,
  Type,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Union,
  Utf8,
  Vector,
} from "apache-arrow";
import type { RecordBatchLike, SchemaLike, TableLike } from "./arrow-api";

// biome-ignore lint/suspicious/noExplicitAny: a foreign apache-arrow object is read by its fields.
type Loose = any;

/** What one call has already converted, so that an object met twice becomes one object. */
class Seen {
  readonly types = new WeakMap<object, DataType>();
  readonly vectors = new WeakMap<object, Vector>();
  readonly data = new WeakMap<object, Data>();
}

/** The value of `key` in `o` when it has type `kind`, else 0.39's error `text`. */
function need(o: object, key: string, kind: "number" | "boolean" | "string" | "object", text: string): Loose {
  const v = (o as Loose)[key];
  if (!(key in o) || typeof v !== kind) throw Error(text);
  return v;
}

/** `children` of a nested type, an array (of exactly `count` when given), else 0.39's error for `what`. */
function childrenOf(o: object, what: string, count?: number): unknown[] {
  const c = (o as Loose).children;
  if (!("children" in o) || !Array.isArray(c)) throw Error(`Expected a ${what} type to have an array-like \`children\` property`);
  if (count !== undefined && c.length !== count) throw Error(`Expected a ${what} type to have exactly one child`);
  return c;
}

/** A metadata map of strings to strings (undefined stays undefined). */
export function sanitizeMetadata(metadataLike?: unknown): Map<string, string> | undefined {
  if (metadataLike === undefined || metadataLike === null) return undefined;
  if (!(metadataLike instanceof Map)) throw Error("Expected metadata, if present, to be a Map<string, string>");
  for (const [k, v] of metadataLike) {
    if (typeof k !== "string" || typeof v !== "string") {
      throw Error("Expected metadata, if present, to be a Map<string, string> but it had non-string keys or values");
    }
  }
  return metadataLike as Map<string, string>;
}

export function sanitizeInt(typeLike: object): Int {
  const text = "Expected an Int Type to have a `bitWidth` and `isSigned` property";
  const bits = need(typeLike, "bitWidth", "number", text);
  return new Int(need(typeLike, "isSigned", "boolean", text), bits);
}

export function sanitizeFloat(typeLike: object): Float {
  return new Float(need(typeLike, "precision", "number", "Expected a Float Type to have a `precision` property"));
}

export function sanitizeDecimal(typeLike: object): Decimal {
  const text = "Expected a Decimal Type to have `scale`, `precision`, and `bitWidth` properties";
  const [scale, precision, bits] = ["scale", "precision", "bitWidth"].map((k) => need(typeLike, k, "number", text));
  return new Decimal(scale, precision, bits);
}

export function sanitizeDate(typeLike: object): Date_ {
  return new Date_(need(typeLike, "unit", "number", "Expected a Date type to have a `unit` property"));
}

export function sanitizeTime(typeLike: object): Time {
  const text = "Expected a Time type to have `unit` and `bitWidth` properties";
  const unit = need(typeLike, "unit", "number", text);
  return new Time(unit, need(typeLike, "bitWidth", "number", text));
}

/** The time zone of a timestamp type: a string, else none. */
function zoneOf(typeLike: object): string | null {
  const tz = (typeLike as Loose).timezone;
  return typeof tz === "string" ? tz : null;
}

export function sanitizeTimestamp(typeLike: object): Timestamp {
  return new Timestamp(need(typeLike, "unit", "number", "Expected a Timestamp type to have a `unit` property"), zoneOf(typeLike));
}

export function sanitizeTypedTimestamp(
  typeLike: object,
  datatype: typeof TimestampNanosecond | typeof TimestampMicrosecond | typeof TimestampMillisecond | typeof TimestampSecond,
): Timestamp {
  return new datatype(zoneOf(typeLike));
}

export function sanitizeInterval(typeLike: object): Interval {
  return new Interval(need(typeLike, "unit", "number", "Expected an Interval type to have a `unit` property"));
}

export function sanitizeDuration(typeLike: object): Duration {
  return new Duration(need(typeLike, "unit", "number", "Expected a Duration type to have a `unit` property"));
}

export function sanitizeFixedSizeBinary(typeLike: object): FixedSizeBinary {
  return new FixedSizeBinary(need(typeLike, "byteWidth", "number", "Expected a FixedSizeBinary type to have a `byteWidth` property"));
}

function listOf(typeLike: object, seen: Seen): List {
  return new List(fieldOf(childrenOf(typeLike, "List", 1)[0], seen));
}

function structOf(typeLike: object, seen: Seen): Struct {
  return new Struct(childrenOf(typeLike, "Struct").map((c) => fieldOf(c, seen)));
}

function unionOf(typeLike: object, seen: Seen): Union {
  if (!("typeIds" in typeLike) || typeof (typeLike as Loose).mode !== "number") {
    throw Error("Expected a Union type to have `typeIds` and `mode` properties");
  }
  const children = childrenOf(typeLike, "Union").map((c) => fieldOf(c, seen));
  return new Union((typeLike as Loose).mode, (typeLike as Loose).typeIds, children);
}

function typedUnionOf(typeLike: object, kind: typeof DenseUnion | typeof SparseUnion, seen: Seen): Union {
  if (!("typeIds" in typeLike)) throw Error("Expected a DenseUnion/SparseUnion type to have a `typeIds` property");
  const children = childrenOf(typeLike, "DenseUnion/SparseUnion").map((c) => fieldOf(c, seen));
  return new kind((typeLike as Loose).typeIds, children);
}

function fixedSizeListOf(typeLike: object, seen: Seen): FixedSizeList {
  const size = need(typeLike, "listSize", "number", "Expected a FixedSizeList type to have a `listSize` property");
  return new FixedSizeList(size, fieldOf(childrenOf(typeLike, "FixedSizeList", 1)[0], seen));
}

function mapOf(typeLike: object, seen: Seen): Map_ {
  const children = childrenOf(typeLike, "Map");
  const sorted = need(typeLike, "keysSorted", "boolean", "Expected a Map type to have a `keysSorted` property");
  if (children.length !== 1) throw Error("Expected a Map type to have exactly one child");
  return new Map_(fieldOf(children[0], seen), sorted);
}

function dictionaryOf(typeLike: object, seen: Seen): Dictionary {
  const id = need(typeLike, "id", "number", "Expected a Dictionary type to have an `id` property");
  const indices = need(typeLike, "indices", "object", "Expected a Dictionary type to have an `indices` property");
  const values = need(typeLike, "dictionary", "object", "Expected a Dictionary type to have an `dictionary` property");
  const ordered = need(typeLike, "isOrdered", "boolean", "Expected a Dictionary type to have an `isOrdered` property");
  return new Dictionary(typeOf(values, seen), typeOf(indices, seen) as Loose, id, ordered);
}

export function sanitizeList(typeLike: object): List {
  return listOf(typeLike, new Seen());
}
export function sanitizeStruct(typeLike: object): Struct {
  return structOf(typeLike, new Seen());
}
export function sanitizeUnion(typeLike: object): Union {
  return unionOf(typeLike, new Seen());
}
export function sanitizeTypedUnion(typeLike: object, unionType: typeof DenseUnion | typeof SparseUnion): Union {
  return typedUnionOf(typeLike, unionType, new Seen());
}
export function sanitizeFixedSizeList(typeLike: object): FixedSizeList {
  return fixedSizeListOf(typeLike, new Seen());
}
export function sanitizeMap(typeLike: object): Map_ {
  return mapOf(typeLike, new Seen());
}
export function sanitizeDictionary(typeLike: object): Dictionary {
  return dictionaryOf(typeLike, new Seen());
}

/** Types without parameters, by type id (the generic ids and the specific ones apache-arrow also uses). */
const PLAIN: Partial<Record<Type, () => DataType>> = {
  [Type.Null]: () => new Null(),
  [Type.Binary]: () => new Binary(),
  [Type.LargeBinary]: () => new LargeBinary(),
  [Type.Utf8]: () => new Utf8(),
  [Type.LargeUtf8]: () => new LargeUtf8(),
  [Type.Bool]: () => new Bool(),
  [Type.Int8]: () => new Int8(),
  [Type.Int16]: () => new Int16(),
  [Type.Int32]: () => new Int32(),
  [Type.Int64]: () => new Int64(),
  [Type.Uint8]: () => new Uint8(),
  [Type.Uint16]: () => new Uint16(),
  [Type.Uint32]: () => new Uint32(),
  [Type.Uint64]: () => new Uint64(),
  [Type.Float16]: () => new Float16(),
  [Type.Float32]: () => new Float32(),
  [Type.Float64]: () => new Float64(),
  [Type.DateMillisecond]: () => new DateMillisecond(),
  [Type.DateDay]: () => new DateDay(),
  [Type.TimeNanosecond]: () => new TimeNanosecond(),
  [Type.TimeMicrosecond]: () => new TimeMicrosecond(),
  [Type.TimeMillisecond]: () => new TimeMillisecond(),
  [Type.TimeSecond]: () => new TimeSecond(),
  [Type.IntervalDayTime]: () => new IntervalDayTime(),
  [Type.IntervalYearMonth]: () => new IntervalYearMonth(),
  [Type.DurationNanosecond]: () => new DurationNanosecond(),
  [Type.DurationMicrosecond]: () => new DurationMicrosecond(),
  [Type.DurationMillisecond]: () => new DurationMillisecond(),
  [Type.DurationSecond]: () => new DurationSecond(),
};

/** Types with parameters or children, by type id. */
const NESTED: Partial<Record<Type, (t: object, seen: Seen) => DataType>> = {
  [Type.Int]: sanitizeInt,
  [Type.Float]: sanitizeFloat,
  [Type.Decimal]: sanitizeDecimal,
  [Type.Date]: sanitizeDate,
  [Type.Time]: sanitizeTime,
  [Type.Timestamp]: sanitizeTimestamp,
  [Type.Interval]: sanitizeInterval,
  [Type.Duration]: sanitizeDuration,
  [Type.FixedSizeBinary]: sanitizeFixedSizeBinary,
  [Type.TimestampNanosecond]: (t) => sanitizeTypedTimestamp(t, TimestampNanosecond),
  [Type.TimestampMicrosecond]: (t) => sanitizeTypedTimestamp(t, TimestampMicrosecond),
  [Type.TimestampMillisecond]: (t) => sanitizeTypedTimestamp(t, TimestampMillisecond),
  [Type.TimestampSecond]: (t) => sanitizeTypedTimestamp(t, TimestampSecond),
  [Type.List]: listOf,
  [Type.Struct]: structOf,
  [Type.Union]: unionOf,
  [Type.DenseUnion]: (t, seen) => typedUnionOf(t, DenseUnion, seen),
  [Type.SparseUnion]: (t, seen) => typedUnionOf(t, SparseUnion, seen),
  [Type.FixedSizeList]: fixedSizeListOf,
  [Type.Map]: mapOf,
  [Type.Dictionary]: dictionaryOf,
};

function typeOf(typeLike: unknown, seen: Seen): DataType {
  if (typeof typeLike === "string") return dataTypeFromName(typeLike);
  if (typeof typeLike !== "object" || typeLike === null) throw Error("Expected a Type but object was null/undefined");
  const known = seen.types.get(typeLike);
  if (known !== undefined) return known;
  if (!("typeId" in typeLike)) throw Error("Expected a Type to have a typeId property");
  const raw = (typeLike as Loose).typeId;
  const id = typeof raw === "function" ? raw.call(typeLike) : raw;
  if (typeof id !== "number") throw Error("Type's typeId property was not a function or number");
  if (id === Type.NONE) throw Error("Received a Type with a typeId of NONE");
  const plain = PLAIN[id as Type];
  const nested = NESTED[id as Type];
  if (plain === undefined && nested === undefined) throw Error(`Unrecognized type id in schema: ${id}`);
  const type = plain !== undefined ? plain() : (nested as (t: object, seen: Seen) => DataType)(typeLike, seen);
  seen.types.set(typeLike, type);
  return type;
}

/** A DataType of ours for a type of any apache-arrow copy, a plain `{ typeId, ... }` or a type name. */
// biome-ignore lint/suspicious/noExplicitAny: 0.39's signature
export function sanitizeType(typeLike: unknown): DataType<any> {
  return typeOf(typeLike, new Seen());
}

function fieldOf(fieldLike: unknown, seen: Seen): Field {
  if (fieldLike instanceof Field) return fieldLike;
  if (typeof fieldLike !== "object" || fieldLike === null) throw Error("Expected a Field but object was null/undefined");
  if (!("type" in fieldLike) || !("name" in fieldLike) || !("nullable" in fieldLike)) {
    throw Error("The field passed in is missing a `type`/`name`/`nullable` property");
  }
  const { name, nullable } = fieldLike as Loose;
  let type: DataType;
  try {
    type = typeOf(fieldLike.type, seen);
  } catch (error: unknown) {
    throw Error(`Unable to sanitize type for field: ${name} due to error: ${error}`, { cause: error });
  }
  if (typeof name !== "string") throw Error("The field passed in had a non-string `name` property");
  if (typeof nullable !== "boolean") throw Error("The field passed in had a non-boolean `nullable` property");
  const metadata = "metadata" in fieldLike ? sanitizeMetadata(fieldLike.metadata) : undefined;
  return new Field(name, type, nullable, metadata);
}

/** A Field of ours for a field of any apache-arrow copy or a plain `{ name, type, nullable, metadata? }`. */
export function sanitizeField(fieldLike: unknown): Field {
  return fieldOf(fieldLike, new Seen());
}

function schemaOf(schemaLike: unknown, seen: Seen): Schema {
  if (schemaLike instanceof Schema) return schemaLike;
  if (typeof schemaLike !== "object" || schemaLike === null) throw Error("Expected a Schema but object was null/undefined");
  if (!("fields" in schemaLike)) throw Error("The schema passed in does not appear to be a schema (no 'fields' property)");
  const metadata = "metadata" in schemaLike ? sanitizeMetadata(schemaLike.metadata) : undefined;
  if (!Array.isArray(schemaLike.fields)) throw Error("The schema passed in had a 'fields' property but it was not an array");
  return new Schema(
    schemaLike.fields.map((f) => fieldOf(f, seen)),
    metadata,
  );
}

/** A Schema of ours for a schema of any apache-arrow copy or a plain `{ fields, metadata? }`. */
export function sanitizeSchema(schemaLike: SchemaLike): Schema {
  return schemaOf(schemaLike, new Seen());
}

function dataOf(dataLike: Loose, seen: Seen): Data {
  if (dataLike instanceof Data) return dataLike;
  const known = seen.data.get(dataLike);
  if (known !== undefined) return known;
  let dictionary: Vector | undefined;
  const dictLike = dataLike.dictionary;
  if (dictLike !== undefined && dictLike !== null) {
    dictionary = seen.vectors.get(dictLike);
    if (dictionary === undefined) {
      dictionary = new Vector((dictLike.data as Loose[]).map((d) => dataOf(d, seen)));
      seen.vectors.set(dictLike, dictionary);
    }
  }
  const buffers = {
    [BufferType.OFFSET]: dataLike.valueOffsets,
    [BufferType.DATA]: dataLike.values,
    [BufferType.VALIDITY]: dataLike.nullBitmap,
    [BufferType.TYPE]: dataLike.typeIds,
  };
  const children = ((dataLike.children ?? []) as Loose[]).map((c) => dataOf(c, seen));
  const data = new Data(typeOf(dataLike.type, seen), dataLike.offset, dataLike.length, dataLike.nullCount, buffers, children, dictionary);
  seen.data.set(dataLike, data);
  return data;
}

function batchOf(batchLike: RecordBatchLike, seen: Seen): RecordBatch {
  if (batchLike instanceof RecordBatch) return batchLike;
  if (typeof batchLike !== "object" || batchLike === null) throw Error("Expected a RecordBatch but object was null/undefined");
  if (!("schema" in batchLike)) {
    throw Error("The record batch passed in does not appear to be a record batch (no 'schema' property)");
  }
  if (!("data" in batchLike)) throw Error("The record batch passed in does not appear to be a record batch (no 'data' property)");
  return new RecordBatch(schemaOf(batchLike.schema, seen), dataOf(batchLike.data, seen) as Data<Struct>);
}

/** A Table of ours for a table of any apache-arrow copy (dictionaries shared across columns and batches stay shared). */
export function sanitizeTable(tableLike: TableLike): Table {
  if (tableLike instanceof Table) return tableLike;
  if (typeof tableLike !== "object" || tableLike === null) throw Error("Expected a Table but object was null/undefined");
  if (!("schema" in tableLike)) throw Error("The table passed in does not appear to be a table (no 'schema' property)");
  if (!("batches" in tableLike)) throw Error("The table passed in does not appear to be a table (no 'columns' property)");
  const seen = new Seen();
  const schema = schemaOf(tableLike.schema, seen);
  return new Table(
    schema,
    tableLike.batches.map((b) => batchOf(b, seen)),
  );
}

/** A RecordBatch of ours for a record batch of any apache-arrow copy. */
export function sanitizeRecordBatch(batchLike: RecordBatchLike): RecordBatch {
  return batchOf(batchLike, new Seen());
}

/** Type names 0.39 reads in a schema given as plain objects (any case). */
const NAMES: Record<string, Type> = {
  null: Type.Null,
  binary: Type.Binary,
  utf8: Type.Utf8,
  bool: Type.Bool,
  int8: Type.Int8,
  int16: Type.Int16,
  int32: Type.Int32,
  int64: Type.Int64,
  uint8: Type.Uint8,
  uint16: Type.Uint16,
  uint32: Type.Uint32,
  uint64: Type.Uint64,
  float16: Type.Float16,
  float32: Type.Float32,
  float64: Type.Float64,
  datemillisecond: Type.DateMillisecond,
  dateday: Type.DateDay,
  timenanosecond: Type.TimeNanosecond,
  timemicrosecond: Type.TimeMicrosecond,
  timemillisecond: Type.TimeMillisecond,
  timesecond: Type.TimeSecond,
  intervaldaytime: Type.IntervalDayTime,
  intervalyearmonth: Type.IntervalYearMonth,
  durationnanosecond: Type.DurationNanosecond,
  durationmicrosecond: Type.DurationMicrosecond,
  durationmillisecond: Type.DurationMillisecond,
  durationsecond: Type.DurationSecond,
};

/** The DataType a type name stands for (0.39's names, any case). */
export function dataTypeFromName(typeName: string): DataType {
  const id = Object.hasOwn(NAMES, typeName.toLowerCase()) ? NAMES[typeName.toLowerCase()] : undefined;
  const make = id === undefined ? undefined : PLAIN[id];
  if (make === undefined) throw new Error(`Unrecognized type name in schema: ${typeName}`);
  return make();
}
