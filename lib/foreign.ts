/**
 * apache-arrow objects made by another copy of apache-arrow (a service that pins 15 to 18.1 for
 * @lancedb/lancedb, or any other version beside ours) become ours, by value: types by their type id and
 * parameters, data by its buffers (no copy of the values), tables batch by batch. `instanceof` fails across
 * copies, so everything here is read structurally; what cannot be read is an InvalidInputError naming it.
 */
import {
  Binary,
  Bool,
  Data,
  type DataType,
  Date_,
  Decimal,
  Dictionary,
  Duration,
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Float,
  Int,
  Interval,
  LargeBinary,
  LargeUtf8,
  List,
  Map_,
  Null,
  RecordBatch,
  Schema,
  Struct,
  Table,
  Time,
  Timestamp,
  Type,
  Utf8,
  Vector,
} from "apache-arrow";

import { invalid } from "./errors";

// biome-ignore lint/suspicious/noExplicitAny: a foreign apache-arrow object is read by its fields.
type Foreign = any;

/** Our Field for a field of any apache-arrow copy. */
export function ourField(f: Foreign): Field {
  if (f instanceof Field) return f;
  const meta = f.metadata instanceof Map ? new Map<string, string>(f.metadata) : undefined;
  return new Field(String(f.name), ourType(f.type), Boolean(f.nullable), meta);
}

/** Our Schema for a schema of any apache-arrow copy. */
export function ourSchema(s: Foreign): Schema {
  if (s instanceof Schema) return s;
  const meta = s.metadata instanceof Map ? new Map<string, string>(s.metadata) : undefined;
  return new Schema((s.fields as Foreign[]).map(ourField), meta);
}

/** Our DataType for a type of any apache-arrow copy (by its type id and parameters). */
export function ourType(t: Foreign): DataType {
  if (t === null || typeof t !== "object" || typeof t.typeId !== "number") {
    throw invalid(`not an apache-arrow DataType: ${String(t)}`);
  }
  const child = () => ourField(t.children[0]);
  switch (t.typeId as Type) {
    case Type.Null:
      return new Null();
    case Type.Int:
      return new Int(t.isSigned, t.bitWidth);
    case Type.Float:
      return new Float(t.precision);
    case Type.Binary:
      return new Binary();
    case Type.LargeBinary:
      return new LargeBinary();
    case Type.Utf8:
      return new Utf8();
    case Type.LargeUtf8:
      return new LargeUtf8();
    case Type.Bool:
      return new Bool();
    case Type.Decimal:
      return new Decimal(t.scale, t.precision, t.bitWidth);
    case Type.Date:
      return new Date_(t.unit);
    case Type.Time:
      return new Time(t.unit, t.bitWidth);
    case Type.Timestamp:
      return new Timestamp(t.unit, t.timezone ?? null);
    case Type.Interval:
      return new Interval(t.unit);
    case Type.Duration:
      return new Duration(t.unit);
    case Type.FixedSizeBinary:
      return new FixedSizeBinary(t.byteWidth);
    case Type.List:
      return new List(child());
    case Type.FixedSizeList:
      return new FixedSizeList(t.listSize, child());
    case Type.Struct:
      return new Struct((t.children as Foreign[]).map(ourField));
    case Type.Map:
      return new Map_(child(), Boolean(t.keysSorted));
    case Type.Dictionary:
      return new Dictionary(ourType(t.dictionary), ourType(t.indices) as Foreign, t.id, t.isOrdered);
    default:
      throw invalid(`apache-arrow type ${String(t)} (type id ${t.typeId}) is not supported by memwal`);
  }
}

/** Our Data for data of any apache-arrow copy: the same buffers under our types. */
function ourData(d: Foreign): Data {
  if (d instanceof Data) return d;
  const type = ourType(d.type);
  const [offsets, values, validity, typeIds] = d.buffers ?? [d.valueOffsets, d.values, d.nullBitmap, d.typeIds];
  const children = ((d.children ?? []) as Foreign[]).map(ourData);
  const dictionary = d.dictionary ? new Vector((d.dictionary.data as Foreign[]).map(ourData)) : undefined;
  return new Data(type, d.offset, d.length, d.nullCount, [offsets, values, validity, typeIds], children, dictionary);
}

/** Our Table for a Table or RecordBatch of any apache-arrow copy. */
export function ourTable(t: Foreign): Table {
  if (t instanceof Table) return t;
  const schema = ourSchema(t.schema);
  const batches = Array.isArray(t.batches) ? (t.batches as Foreign[]) : [t];
  return new Table(
    schema,
    batches.map((b) => new RecordBatch(schema, ourData(b.data) as Data<Struct>)),
  );
}
