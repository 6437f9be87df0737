/**
 * Two schema-walking helpers of `memwal/arrow` (0.39 names): `dataTypeToJson`, an apache-arrow type in the JSON
 * schema encoding of the LanceDB REST protocol (the one crates/core/src/json_schema.rs writes and reads), and
 * `ensureNestedFieldsExist`, rows completed with nulls for every field (nested ones included) of a schema.
 */
import type {
  DataType,
  Date_,
  Decimal,
  Dictionary,
  Duration,
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Schema,
  Time,
  Timestamp,
} from "apache-arrow";
import { DateUnit, TimeUnit, Type } from "apache-arrow";

import { describe, toSchema } from "./arrow-infer";
import { invalid, notSupported } from "./errors";
import { ourType } from "./foreign";

/** A data type in the JSON schema encoding. */
export interface JsonDataType {
  type: string;
  fields?: JsonField[];
  length?: number;
}

/** A field in the JSON schema encoding. */
export interface JsonField {
  name: string;
  type: JsonDataType;
  nullable: boolean;
  metadata: Record<string, string>;
}

const UNITS: Record<number, string> = {
  [TimeUnit.SECOND]: "s",
  [TimeUnit.MILLISECOND]: "ms",
  [TimeUnit.MICROSECOND]: "us",
  [TimeUnit.NANOSECOND]: "ns",
};

const SIMPLE: Partial<Record<Type, string>> = {
  [Type.Null]: "null",
  [Type.Bool]: "bool",
  [Type.Utf8]: "string",
  [Type.LargeUtf8]: "large_string",
  [Type.Binary]: "binary",
  [Type.LargeBinary]: "large_binary",
};

function fieldToJson(f: Field): JsonField {
  return { name: f.name, type: dataTypeToJson(f.type), nullable: f.nullable, metadata: Object.fromEntries(f.metadata) };
}

function numericName(t: DataType): string | undefined {
  if (t.typeId === Type.Int) {
    const { isSigned, bitWidth } = t as unknown as { isSigned: boolean; bitWidth: number };
    return `${isSigned ? "" : "u"}int${bitWidth}`;
  }
  if (t.typeId === Type.Float) return ["halffloat", "float", "double"][(t as unknown as { precision: number }).precision];
  return undefined;
}

function temporalName(t: DataType): string | undefined {
  switch (t.typeId) {
    case Type.Date:
      return (t as Date_).unit === DateUnit.DAY ? "date32:day" : "date64:ms";
    case Type.Timestamp:
      return `timestamp:${UNITS[(t as Timestamp).unit]}:${(t as Timestamp).timezone ?? "-"}`;
    case Type.Time:
      return `time${(t as Time).bitWidth}:${UNITS[(t as Time).unit]}`;
    case Type.Duration:
      return `duration:${UNITS[(t as Duration).unit]}`;
    case Type.Decimal:
      return `decimal:${(t as Decimal).bitWidth}:${(t as Decimal).precision}:${(t as Decimal).scale}`;
    default:
      return undefined;
  }
}

/** An apache-arrow DataType (of any copy) in the JSON schema encoding; a type it has no form for is NotSupported. */
export function dataTypeToJson(dataType: DataType): JsonDataType {
  const t = ourType(dataType);
  const name = SIMPLE[t.typeId] ?? numericName(t) ?? temporalName(t);
  if (name !== undefined) return { type: name };
  switch (t.typeId) {
    case Type.List:
      return { type: "list", fields: t.children.map(fieldToJson) };
    case Type.FixedSizeList:
      return { type: "fixed_size_list", fields: t.children.map(fieldToJson), length: (t as FixedSizeList).listSize };
    case Type.FixedSizeBinary:
      return { type: "fixed_size_binary", length: (t as FixedSizeBinary).byteWidth };
    case Type.Struct:
      return { type: "struct", fields: t.children.map(fieldToJson) };
    case Type.Dictionary: {
      const d = t as Dictionary;
      const value = dataTypeToJson(d.dictionary).type;
      if (value.includes(":") && !value.startsWith("date"))
        throw notSupported(`dataTypeToJson: a dictionary of ${d.dictionary} has no JSON form`);
      return { type: `dict:${value}:${dataTypeToJson(d.indices).type}:false` };
    }
    default:
      throw notSupported(`dataTypeToJson: the type ${t} has no JSON schema form`);
  }
}

function completeRow(value: Record<string, unknown>, fields: Field[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const f of fields) {
    const v = value[f.name];
    const isStruct = f.type.typeId === Type.Struct;
    if (isStruct && v === undefined) out[f.name] = completeRow({}, f.type.children);
    else if (isStruct && typeof v === "object" && v !== null && !Array.isArray(v)) {
      out[f.name] = completeRow(v as Record<string, unknown>, f.type.children);
    } else out[f.name] = v === undefined ? null : v;
  }
  return out;
}

/**
 * Rows with exactly the fields of `schema`, in its order (as 0.39): a missing field is null, a missing struct
 * is a struct of nulls, a struct value gets its missing nested fields as nulls (recursively); keys the schema
 * lacks are left out. The rows given are not modified.
 */
export function ensureNestedFieldsExist(data: Array<Record<string, unknown>>, schema: Schema): Array<Record<string, unknown>> {
  const s = toSchema(schema);
  if (!Array.isArray(data)) throw invalid(`ensureNestedFieldsExist: data must be an array of rows, got ${describe(data)}`);
  return data.map((r, i) => {
    if (typeof r !== "object" || r === null || Array.isArray(r))
      throw invalid(`ensureNestedFieldsExist: row ${i} is ${describe(r)}, not an object`);
    return completeRow(r, s.fields);
  });
}
