/**
 * The engine behind `makeArrowTable` (lib/arrow-api.ts): column types inferred from plain JS rows, schemas given
 * as apache-arrow objects (ours or another copy's) or as plain objects, and every value checked against its
 * column's type before apache-arrow builds it. A value that does not fit (a string in an integer column, a
 * vector of the wrong length, a key the schema lacks) is an InvalidInputError naming the column and the row;
 * nothing is truncated, converted to text or dropped.
 */
import {
  Table as ArrowTable,
  Binary,
  Bool,
  type DataType,
  Dictionary,
  Field,
  type FixedSizeBinary,
  FixedSizeList,
  Float16,
  Float32,
  Float64,
  type Int,
  Int8,
  Int16,
  Int32,
  Int64,
  LargeBinary,
  LargeUtf8,
  List,
  Null,
  RecordBatch,
  Schema,
  Struct,
  TimestampMillisecond,
  Type,
  Uint8,
  Uint16,
  Uint32,
  Uint64,
  Utf8,
  type Vector,
  vectorFromArray,
} from "apache-arrow";

import { usedFields } from "./arrow-subset";
import { invalid } from "./errors";
import { ourType } from "./foreign";

/** What inference knows of a column so far (`undefined`: only nulls seen). */
type Shape =
  | { kind: "scalar"; type: DataType }
  | { kind: "list"; item: Shape | undefined }
  | { kind: "fixed"; size: number; item: DataType }
  | { kind: "struct"; fields: Map<string, Shape | undefined> };

/** The inference options of one makeArrowTable call. */
export interface InferOptions {
  /** Vector columns by name, with their element type. */
  vectorTypes: Map<string, DataType>;
  /** The vector columns the caller listed (their type then wins over a typed array's). */
  explicitVectors: Set<string>;
  dictionaryEncodeStrings: boolean;
}

/** Names 0.39 treats as vector columns without being told. */
const VECTORISH = /vector|embedding/i;

/** A short description of a value for error messages. */
export function describe(v: unknown): string {
  if (v === null) return "null";
  if (typeof v === "bigint") return `${v}n`;
  if (typeof v === "string") return JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v);
  if (typeof v === "number" || typeof v === "boolean") return String(v);
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (v instanceof Date) return `the Date ${v.toISOString?.() ?? "Invalid Date"}`;
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  if (typeof v === "object") return `an object of class ${v.constructor?.name ?? "null"}`;
  return `a ${typeof v}`;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== "object" || v === null) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** The element type of a typed array (Buffer excluded: it is Binary). */
function typedArrayType(v: ArrayBufferView): DataType | undefined {
  if (v instanceof Float32Array) return new Float32();
  if (v instanceof Float64Array) return new Float64();
  if (v instanceof Uint8Array || v instanceof Uint8ClampedArray) return new Uint8();
  if (v instanceof Int8Array) return new Int8();
  if (v instanceof Int16Array) return new Int16();
  if (v instanceof Uint16Array) return new Uint16();
  if (v instanceof Int32Array) return new Int32();
  if (v instanceof Uint32Array) return new Uint32();
  if (v instanceof BigInt64Array) return new Int64();
  if (v instanceof BigUint64Array) return new Uint64();
  return undefined;
}

/** The shape of an array in a vector column: numbers (or nulls) only, at least one. */
function vectorShape(path: string, v: ArrayLike<unknown>, item: DataType, row: number): Shape {
  if (v.length === 0) throw invalid(`vector column '${path}': row ${row} has an empty vector`);
  for (let i = 0; i < v.length; i++) {
    const x = v[i];
    if (x !== null && typeof x !== "number") {
      throw invalid(`vector column '${path}': row ${row} has ${describe(x)} at position ${i}; a vector holds numbers`);
    }
  }
  return { kind: "fixed", size: v.length, item };
}

function inferArray(path: string, name: string, v: unknown[], opts: InferOptions, row: number): Shape | undefined {
  const vt = opts.vectorTypes.get(name);
  if (vt !== undefined) return vectorShape(path, v, vt, row);
  const numeric = v.length > 0 && v.every((x) => x === null || typeof x === "number") && v.some((x) => x !== null);
  if (numeric && VECTORISH.test(name)) return vectorShape(path, v, new Float32(), row);
  let item: Shape | undefined;
  for (const x of v) item = merge(`${path}[]`, item, infer(`${path}[]`, "", x, opts, row), row);
  return { kind: "list", item };
}

function inferObject(path: string, v: Record<string, unknown>, opts: InferOptions, row: number): Shape {
  const fields = new Map<string, Shape | undefined>();
  for (const [k, x] of Object.entries(v)) fields.set(k, infer(`${path}.${k}`, k, x, opts, row));
  return { kind: "struct", fields };
}

/** The shape of one value; `name` is its field's name (vector columns are found by it). */
function infer(path: string, name: string, v: unknown, opts: InferOptions, row: number): Shape | undefined {
  if (v === null || v === undefined) return undefined;
  const scalar = (type: DataType): Shape => ({ kind: "scalar", type });
  switch (typeof v) {
    case "boolean":
      return scalar(new Bool());
    case "number":
      return scalar(new Float64());
    case "bigint":
      return scalar(new Int64());
    case "string":
      return scalar(opts.dictionaryEncodeStrings ? new Dictionary(new Utf8(), new Int32()) : new Utf8());
  }
  if (v instanceof Date) return scalar(new TimestampMillisecond());
  if (Buffer.isBuffer(v)) return scalar(new Binary());
  if (ArrayBuffer.isView(v)) {
    const own = typedArrayType(v);
    if (own === undefined) throw invalid(`cannot infer the type of column '${path}' from ${describe(v)}; pass a schema`);
    const listed = opts.explicitVectors.has(name) ? opts.vectorTypes.get(name) : undefined;
    return vectorShape(path, v as unknown as ArrayLike<unknown>, listed ?? own, row);
  }
  if (Array.isArray(v)) return inferArray(path, name, v, opts, row);
  if (isPlainObject(v)) return inferObject(path, v, opts, row);
  throw invalid(`cannot infer the type of column '${path}' from ${describe(v)} in row ${row}; pass a schema`);
}

function shapeName(s: Shape): string {
  if (s.kind === "scalar") return String(s.type);
  if (s.kind === "fixed") return `a vector of ${s.size} ${s.item}`;
  return s.kind;
}

/** Two shapes of one column, from different rows (or list items), as one; a conflict names both. */
function merge(path: string, a: Shape | undefined, b: Shape | undefined, row: number): Shape | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  const conflict = () =>
    invalid(`column '${path}' holds ${shapeName(a)} before row ${row} and ${shapeName(b)} in row ${row}; pass a schema to say its type`);
  if (a.kind === "scalar" && b.kind === "scalar") {
    if (String(a.type) !== String(b.type)) throw conflict();
    return a;
  }
  if (a.kind === "fixed" && b.kind === "fixed") {
    if (a.size !== b.size) {
      throw invalid(
        `vector column '${path}' has ${b.size} values in row ${row} but ${a.size} before; every vector of a column has one length`,
      );
    }
    if (String(a.item) !== String(b.item)) throw conflict();
    return a;
  }
  if (a.kind === "list" && b.kind === "list") return { kind: "list", item: merge(`${path}[]`, a.item, b.item, row) };
  if (a.kind === "struct" && b.kind === "struct") {
    const fields = new Map(a.fields);
    for (const [k, s] of b.fields) fields.set(k, merge(`${path}.${k}`, fields.get(k), s, row));
    return { kind: "struct", fields };
  }
  throw conflict();
}

/** The Arrow type of a shape; a column with nothing to infer from is an error naming it. */
function finish(path: string, s: Shape | undefined): DataType {
  if (s === undefined) {
    throw invalid(`cannot infer the type of column '${path}': it holds only nulls or empty lists; pass a schema`);
  }
  switch (s.kind) {
    case "scalar":
      return s.type;
    case "fixed":
      return new FixedSizeList(s.size, new Field("item", s.item, true));
    case "list":
      return new List(new Field("item", finish(`${path}[]`, s.item), true));
    case "struct": {
      if (s.fields.size === 0) throw invalid(`cannot infer the type of column '${path}': its objects have no keys; pass a schema`);
      return new Struct([...s.fields].map(([k, f]) => new Field(k, finish(`${path}.${k}`, f), true)));
    }
  }
}

/** The schema inferred from rows: columns in order of first appearance, every field nullable. */
export function inferSchema(rows: ReadonlyArray<Record<string, unknown>>, opts: InferOptions): Schema {
  const columns = new Map<string, Shape | undefined>();
  rows.forEach((r, row) => {
    // `undefined` is an absent key, as in 0.39 (a key no row gives a value makes no column); `null` is a value.
    for (const [k, v] of Object.entries(r)) {
      if (v !== undefined) columns.set(k, merge(k, columns.get(k), infer(k, k, v, opts, row), row));
    }
  });
  return new Schema([...columns].map(([k, s]) => new Field(k, finish(k, s), true)));
}

/** Type names a plain-object schema may use (`{ name: "a", type: "int32", nullable: true }`). */
const TYPE_NAMES: Record<string, () => DataType> = {
  null: () => new Null(),
  bool: () => new Bool(),
  boolean: () => new Bool(),
  int8: () => new Int8(),
  int16: () => new Int16(),
  int32: () => new Int32(),
  int64: () => new Int64(),
  uint8: () => new Uint8(),
  uint16: () => new Uint16(),
  uint32: () => new Uint32(),
  uint64: () => new Uint64(),
  float16: () => new Float16(),
  halffloat: () => new Float16(),
  float32: () => new Float32(),
  float: () => new Float32(),
  float64: () => new Float64(),
  double: () => new Float64(),
  utf8: () => new Utf8(),
  string: () => new Utf8(),
  largeutf8: () => new LargeUtf8(),
  largestring: () => new LargeUtf8(),
  binary: () => new Binary(),
  largebinary: () => new LargeBinary(),
};

/** 0.39's words for metadata that is not all strings (its tests match them). */
const METADATA_NOT_STRINGS = "Expected metadata, if present, to be a Map<string, string> but it had non-string keys or values";

/** Metadata (a Map or a plain object) as a Map of strings; a non-string key or value is refused, never converted. */
function metadataOf(m: unknown, where: string): Map<string, string> | undefined {
  if (m === undefined || m === null) return undefined;
  const entries: Array<[unknown, unknown]> | undefined = m instanceof Map ? [...m] : isPlainObject(m) ? Object.entries(m) : undefined;
  if (entries === undefined) throw invalid(`${where}: metadata must be a Map<string, string>, got ${describe(m)}`);
  const bad = entries.find(([k, v]) => typeof k !== "string" || typeof v !== "string");
  if (bad !== undefined) throw invalid(`${METADATA_NOT_STRINGS} (${where}: ${describe(bad[0])} -> ${describe(bad[1])})`);
  return new Map(entries as Array<[string, string]>);
}

/** Checks the metadata of `f` and of the fields nested in its type (as 0.39's sanitizeField does). */
function checkFieldMetadata(f: Field, where: string): void {
  metadataOf(f.metadata, `field '${where}${f.name}'`);
  for (const c of f.type?.children ?? []) checkFieldMetadata(c, `${where}${f.name}.`);
}

/** A field given as a Field of any apache-arrow copy or as `{ name, type, nullable?, metadata? }`. */
function fieldOf(f: unknown, i: number): Field {
  if (f instanceof Field) {
    checkFieldMetadata(f, "");
    return f;
  }
  if (typeof f !== "object" || f === null) throw invalid(`schema field ${i} is ${describe(f)}, not a field`);
  const { name, type, nullable, metadata } = f as { name?: unknown; type?: unknown; nullable?: unknown; metadata?: unknown };
  if (typeof name !== "string") throw invalid(`schema field ${i} has no string 'name'`);
  if (typeof type === "string") {
    const make = TYPE_NAMES[type.toLowerCase().replace(/_/g, "")];
    if (make === undefined) {
      throw invalid(`schema field '${name}': unknown type name ${JSON.stringify(type)} (use an apache-arrow DataType)`);
    }
    return new Field(name, make(), nullable === undefined ? true : Boolean(nullable), metadataOf(metadata, `field '${name}'`));
  }
  if (type === null || typeof type !== "object") throw invalid(`schema field '${name}' has no type`);
  const field = new Field(name, ourType(type), nullable === undefined ? true : Boolean(nullable), metadataOf(metadata, `field '${name}'`));
  checkFieldMetadata(field, "");
  return field;
}

/**
 * Our Schema for an apache-arrow Schema of any copy (15 to 21) or a plain `{ fields, metadata? }`. Metadata (the
 * schema's and every field's, nested too) must be strings, as 0.39 checks.
 */
export function toSchema(s: unknown): Schema {
  if (s instanceof Schema) {
    metadataOf(s.metadata, "schema");
    for (const f of s.fields) checkFieldMetadata(f, "");
    return s;
  }
  if (typeof s !== "object" || s === null || !Array.isArray((s as { fields?: unknown }).fields)) {
    throw invalid(`schema must be an apache-arrow Schema or { fields: [...] }, got ${describe(s)}`);
  }
  // A Schema of another apache-arrow copy reads as a plain one: its Fields have name, type, nullable, metadata.
  const { fields, metadata } = s as { fields: unknown[]; metadata?: unknown };
  return new Schema(fields.map(fieldOf), metadataOf(metadata, "schema"));
}

/** Checks one value of a column and converts it to what apache-arrow's builder takes. */
type Fit = (v: unknown, row: number) => unknown;

/** The fit of a field: nulls allowed when it is nullable. */
function fitField(path: string, field: Field): Fit {
  const inner = fitValue(path, field.type);
  const nullable = field.nullable;
  // A struct a row leaves out is one whose fields are all missing (0.39), unlike an explicit null.
  const struct = field.type.typeId === Type.Struct;
  return (v, row) => {
    if (v === undefined && struct) return inner({}, row);
    if (v === null || v === undefined) {
      if (!nullable) throw invalid(`column '${path}' is not nullable but row ${row} has no value`);
      return null;
    }
    return inner(v, row);
  };
}

function fitInt(path: string, type: Int): Fit {
  const { bitWidth, isSigned } = type;
  const min = isSigned ? -(1n << BigInt(bitWidth - 1)) : 0n;
  const max = isSigned ? (1n << BigInt(bitWidth - 1)) - 1n : (1n << BigInt(bitWidth)) - 1n;
  return (v, row) => {
    let n: bigint;
    if (typeof v === "bigint") n = v;
    else if (typeof v === "number" && Number.isSafeInteger(v)) n = BigInt(v);
    else throw invalid(`column '${path}' is ${type} but row ${row} has ${describe(v)}`);
    if (n < min || n > max) throw invalid(`column '${path}' is ${type}: row ${row} has ${n}, out of its range (${min} to ${max})`);
    return bitWidth === 64 ? n : Number(n);
  };
}

function isListValue(v: unknown): v is ArrayLike<unknown> {
  return Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView));
}

/** Lists and fixed-size lists (`size` set): an array or typed array, each item fitted to the child field. */
function fitList(path: string, child: Field, size?: number): Fit {
  const item = fitField(`${path}[]`, child);
  return (v, row) => {
    if (!isListValue(v)) throw invalid(`column '${path}' holds lists but row ${row} has ${describe(v)}`);
    if (size !== undefined && v.length !== size) {
      throw invalid(`column '${path}' holds ${size} values per row but row ${row} has ${v.length}`);
    }
    return Array.from(v, (x) => item(x, row));
  };
}

function fitStruct(path: string, children: Field[]): Fit {
  const fits = children.map((c) => [c.name, fitField(`${path}.${c.name}`, c)] as const);
  const names = new Set(children.map((c) => c.name));
  return (v, row) => {
    if (typeof v !== "object" || v === null || isListValue(v)) {
      throw invalid(`column '${path}' holds objects but row ${row} has ${describe(v)}`);
    }
    const o = v as Record<string, unknown>;
    if (isPlainObject(o)) {
      const extra = Object.keys(o).find((k) => !names.has(k) && o[k] !== undefined);
      if (extra !== undefined)
        throw invalid(`column '${path}' has no field '${extra}' (row ${row}); its fields are ${[...names].join(", ")}`);
    }
    return Object.fromEntries(fits.map(([k, f]) => [k, f(o[k], row)]));
  };
}

/** A non-null value of `type`, checked. */
function fitValue(path: string, type: DataType): Fit {
  const check =
    (ok: (v: unknown) => boolean): Fit =>
    (v, row) => {
      if (!ok(v)) throw invalid(`column '${path}' is ${type} but row ${row} has ${describe(v)}`);
      return v;
    };
  switch (type.typeId) {
    case Type.Int:
      return fitInt(path, type as Int);
    case Type.Float:
      return check((v) => typeof v === "number");
    case Type.Utf8:
    case Type.LargeUtf8:
      return check((v) => typeof v === "string");
    case Type.Bool:
      return check((v) => typeof v === "boolean");
    case Type.Binary:
    case Type.LargeBinary:
      return check((v) => v instanceof Uint8Array);
    case Type.FixedSizeBinary:
      return check((v) => v instanceof Uint8Array && v.length === (type as FixedSizeBinary).byteWidth);
    case Type.Timestamp:
    case Type.Date:
      // apache-arrow takes a Date or milliseconds since the epoch, whatever the unit.
      return check((v) => (v instanceof Date && !Number.isNaN(v.getTime())) || (typeof v === "number" && Number.isFinite(v)));
    case Type.Dictionary:
      return fitValue(path, (type as Dictionary).dictionary);
    case Type.List:
      return fitList(path, (type as List).children[0]);
    case Type.FixedSizeList:
      return fitList(path, (type as FixedSizeList).children[0], (type as FixedSizeList).listSize);
    case Type.Struct:
      return fitStruct(path, (type as Struct).children);
    case Type.Null:
      return check(() => false);
    default:
      return (v) => v;
  }
}

/** One column's values fitted to `field` and built by apache-arrow. */
function buildColumn(rows: ReadonlyArray<Record<string, unknown>>, field: Field): Vector {
  const check = fitField(field.name, field);
  const values = rows.map((r, row) => check(r[field.name], row));
  try {
    return vectorFromArray(values, field.type);
  } catch (e) {
    throw invalid(`cannot build column '${field.name}' as ${field.type}: ${(e as Error).message}`, e);
  }
}

/**
 * An Arrow table of `rows` under `schema`: the part of it the rows give values for (usedFields: structs cut to
 * the fields given), in the schema's order (a key no field names is an error). Missing keys and `undefined` are
 * nulls; a missing struct is one of nulls.
 */
export function buildTable(rows: ReadonlyArray<Record<string, unknown>>, schema: Schema, metadata?: Map<string, string>): ArrowTable {
  const names = new Set(schema.fields.map((f) => f.name));
  rows.forEach((r, row) => {
    for (const k of Object.keys(r)) {
      if (!names.has(k) && r[k] !== undefined)
        throw invalid(`column '${k}' (row ${row}) is not in the schema; its columns are ${[...names].join(", ")}`);
    }
  });
  const fields = usedFields(rows, schema.fields);
  if (fields.length === 0) throw invalid("the rows have no keys: no column to make (pass a schema and no rows for an empty table)");
  const vectors = fields.map((f) => buildColumn(rows, f));
  const meta = new Map([...schema.metadata, ...(metadata ?? [])]);
  // Our fields (nullability, metadata) over the built types (a dictionary keeps the id its vector has).
  const out = new Schema(
    fields.map((f, i) => new Field(f.name, vectors[i].type, f.nullable, f.metadata)),
    meta,
  );
  const built = new ArrowTable(Object.fromEntries(fields.map((f, i) => [f.name, vectors[i]])));
  return new ArrowTable(
    out,
    built.batches.map((b) => new RecordBatch(out, b.data)),
  );
}
